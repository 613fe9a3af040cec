"""The match-history dataset: every match exactly once, on disk and pushed to the Hub.

The middle of the Arena's one-way flow: the matchmaker writes it (`store.HistoryStore`,
`statuses.StatusLog`), the leaderboard only reads it (`store.HistoryReader`), and so can
anyone else, from the Hub (`datasets.load_dataset`). No nmmo here.
"""
