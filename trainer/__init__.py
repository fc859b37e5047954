"""What train.py runs but a reader of the method does not need: run logs, checkpoints and export,
FSDP2 sharding, the hardware choices (bf16 on CPU, the attention kernel).

    python -c "import trainer.hardware as h; print(h.cpu_bf16_is_fast())"
"""
