"""How a policy is isolated: each submitted team in its own confined process.

- `host`: the match's side (`SandboxedTeam`, `sandboxed_host`): starts, feeds, times and
  stops a team's process, and turns whatever it does into faults.
- `zygote`: the warm process that forks every team process of a match process.
- `worker`: the inside of a team's process: confines itself, then loads and runs the policy.
- `protocol`: what crosses the boundary (shared-memory observations, bounded JSON answers).
- `confine`: the Linux mechanisms (Landlock, namespaces, seccomp, capabilities, rlimits).

Nothing is imported here, so that `python -m matchmaking.sandbox.zygote` loads only what a
team's process needs.
"""
