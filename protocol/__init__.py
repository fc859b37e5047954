"""The text protocol between the model and the environment (env.py runs the episode on top of it).

    python -c "import protocol.actions as p; print([a.kind for a in p.parse('finish')])"

lines.py: the line convention, the aligner, provenance; actions.py: the parser; edits.py: applying edits;
messages.py: the prompt and test reports; chat.py: chat-template ids; functions.py, behaviour.py: what the verdict
reads; hacks.py: the hacking signal.
"""
