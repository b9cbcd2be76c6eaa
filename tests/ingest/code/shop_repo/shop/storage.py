"""Where orders are kept."""

from __future__ import annotations

import json


class Store:
    """Base of every store."""

    def save(self, key: str, value: object) -> None:
        self.write(key, json.dumps(value))

    def write(self, key: str, text: str) -> None:
        raise NotImplementedError


class Repo(Store):
    def __init__(self) -> None:
        self.rows: dict[str, str] = {}

    def write(self, key: str, text: str) -> None:
        self.rows[key] = text

    def load(self, key: str) -> str:
        return self.rows.get(key, "")


class Cache:
    def save(self, key: str, value: object) -> None:
        print(key, value)


def connect() -> Repo:
    return Repo()
