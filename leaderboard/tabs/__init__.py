"""The Space's tabs, one module per tab, named as the page labels it.

`leaderboard.pages.build` places them in the page's order: `pvp` (with the overfitting
plot), `head_to_head`, `pve`, `submissions`, `policy`, the Analytics tab
(`leaderboard.analytics`), `matches`, `replay`, `about`. Each builds its components, the
events and named API endpoints that only it uses, and hands back what `build` refreshes
(`context.TabContext` is what they all read). Events that span tabs (the page load, the
timers' ticks, a match clicked into the replay) are `build`'s.
"""
