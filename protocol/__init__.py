"""The text protocol between the model and the environment (env.py runs the episode on top of it).

    python -c "import protocol.actions as p; print([a.kind for a in p.parse('finish')])"

lines.py: the line convention, the exact LCS aligner, provenance through an edit; actions.py: the
action parser; edits.py: applying edits with provenance, the diff repairer; messages.py: the prompt,
test reports and syntax errors; chat.py: chat-template token ids.
"""
