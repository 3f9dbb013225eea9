"""What every client's hooks share: running a hook that never fails the user, and the session → task binding.

Imports tools, models and settings; never `ctxkeep.server` or a client folder.
"""
