"""What train.py runs but a reader of the method does not need: logs, checkpoints, FSDP2, the hardware choices.

    python -c "import trainer.hardware as h; print(h.cpu_bf16_is_fast())"
"""
