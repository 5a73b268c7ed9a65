"""What the gateway remembers of an episode: the recorder (calls and episodes to the
database, token level) and drift tracking between an agent's context and what was
generated (`drift`).

Owns the write path of episodes and calls. Must not know training: runs read what it wrote.
"""
