"""Applying the policies (the model and its evaluation are :mod:`kg.policies`, below): the
project's policy files read, linted and synced into the log, an agent's or a user's action
checked and a refusal recorded, a node's or a file's effect explained."""
