"""Results on the model's own page: the Arena's figures of a qualified revision, published
as `model-index` metadata in a pull request on the submission's repo.

The last step of the data's one way (Hub -> matchmaking -> history -> leaderboard ->
model cards): it reads the leaderboard's `Standings` and the status log, and writes back
to the Hub.

- `modelcards.publications`: which figures of which revision, and whether it is time to
  publish them (pure; PvP figures only once the rating is settled, `arena.settling`).
- `modelcards.card`: those figures as `EvalResult`s in a card's metadata, the pull
  request's text (a rating not settled yet said to be provisional), and the card's
  opt-out (pure).
- `modelcards.ledger`: what was published, declined or merged, durably (a JSON-lines file).
- `modelcards.publisher`: the Hub side: one pull request per repo, opened or updated, in
  the background.
"""
