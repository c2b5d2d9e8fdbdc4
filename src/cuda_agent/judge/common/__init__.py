"""Plumbing both sides of the trust boundary load: it moves bytes and decides nothing.

Trust rule: the same module is loaded in the parent, the reference worker and the candidate worker, so
in the candidate's process it is the candidate's to patch (like `candidate/`). It therefore establishes
no fact; each protocol's trusted end treats what it receives as hostile: the channel bounds replies and
their size (`channel`), tensor files and shared buffers are bounds-checked and copied before use
(`tensorfile`, `shared_outputs`), and process limits are set by the parent between fork and exec
(`procs`). Modules here import only `common/` and the standard library or torch.
"""
