"""Small fakes for the benchmarks: a hashed bag-of-words encoder, ten APIs and twelve queries over them.

benchmarks/ imports nothing from tests/ (tests/helpers.py builds its fakes on these): a
benchmark keeps working whatever the tests rearrange, and pytest never collects benchmark code.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from core.data.registry import Registry
from core.data.toolbench import Api
from core.retrieval.discovery import Retriever
from core.retrieval.embedding import TwoSided
from core.retrieval.index import VectorIndex


class BagOfWordsEncoder(TwoSided):
    """Texts sharing words get similar unit vectors: deterministic and instant, no model to load."""

    model_id = "fake-bow-64"
    dim = 64
    runtime = "fake"

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress=None) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"[a-z0-9]+", text.lower()) or ["<empty>"]:
                h = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "little")
                out[i, h % self.dim] += 1.0 if (h >> 16) & 1 else -1.0
            norm = np.linalg.norm(out[i])
            out[i] = out[i] / norm if norm else np.eye(self.dim, dtype=np.float32)[0]
        if progress:
            progress(len(texts), len(texts))
        return out


APIS = (
    Api("Hotels", "search hotels", "Travel", "Find hotels in a city with prices"),
    Api("Hotels", "hotel details", "Travel", "Details and reviews of one hotel"),
    Api("Currency", "exchange rate", "Finance", "Currency exchange rate between two currencies"),
    Api("Currency", "convert", "Finance", "Convert an amount from one currency to another"),
    Api("IP Lookup", "ip info", "Data", "Look up geolocation of an IP address"),
    Api(" Weather", "forecast", "Weather", "Weather forecast for a city"),
    Api("Jokes", "random joke", "Entertainment", "A random joke"),
    Api("Jokes", "joke by category", "Entertainment", "A joke from a category"),
    Api("Football", "player stats", "Sports", "Statistics of a football player"),
    Api("Football", "transfers", "", "Transfers of football players"),
)

H, HD = ("Hotels", "search hotels"), ("Hotels", "hotel details")
FX, CV = ("Currency", "exchange rate"), ("Currency", "convert")
IP, WX = ("IP Lookup", "ip info"), (" Weather", "forecast")
JK, JC = ("Jokes", "random joke"), ("Jokes", "joke by category")
FP = ("Football", "player stats")

# (subset, query, relevant APIs, api_list): 6 single-tool and 6 two-tool requests over APIS
QUERY_SPECS = (
    ("G1_instruction", "Find hotels in Paris with prices", (H,), (H, HD)),
    ("G1_instruction", "Tell me a random joke", (JK,), (JK, JC)),
    ("G1_instruction", "Weather forecast for Berlin", (WX,), (WX,)),
    ("G1_instruction", "Convert 100 dollars to another currency", (CV,), (CV,)),
    ("G1_instruction", "Look up the geolocation of IP address 1.2.3.4", (IP,), (IP,)),
    ("G1_instruction", "Statistics of the football player Messi", (FP,), (FP,)),
    ("G2_instruction", "Find hotels in London and check the currency exchange rate", (H, FX), (H, FX)),
    ("G2_instruction", "Tell me a random joke and the weather forecast for Rome", (JK, WX), (JK, WX)),
    ("G2_instruction", "Show football player stats and the weather forecast", (FP, WX), (FP, WX)),
    ("G2_instruction", "Look up my IP address and find hotels nearby", (IP, H), (IP, H)),
    ("G2_instruction", "Check the currency exchange rate and tell me a random joke", (FX, JK), (FX, JK)),
    ("G2_instruction", "A random joke and the weather forecast for a city", (JK, WX), (JK, WX)),
)


def make_retriever() -> Retriever:
    """A retriever over APIS with the bag-of-words encoder."""
    registry = Registry("small", APIS)
    encoder = BagOfWordsEncoder()
    return Retriever(registry, encoder, VectorIndex(encoder.encode(registry.documents)))
