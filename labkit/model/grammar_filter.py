"""A decision's grammar that asks about the sampler's candidates, not the whole vocabulary.

llama-cpp-python's `grammar=` puts llama.cpp's grammar sampler ahead of top-k in the sampler chain, so at
every token the grammar walks the whole vocabulary (49,152 pieces for SmolLM2): about half as long again as
the model takes to produce the token. llama.cpp's own server samples first and asks the grammar only about
the token it chose. `GrammarFilter` gets that saving through the public `logits_processor=` hook (the first
sampler of the same chain) and keeps `grammar=`'s replies exactly. At each token it asks its own llama.cpp
grammar sampler about the tokens the rest of the chain can still pick — the top logit at temperature 0,
where the greedy sampler takes it; the `top_k` best otherwise — and hands the logits on unchanged when the
grammar allows every one of them: masking would remove only tokens top-k drops anyway. When one is refused
it asks about four times as many, and again (the whole vocabulary past a thousand), until it knows the
`top_k` best tokens the grammar allows, and keeps only those: exactly the tokens top-k keeps after
`grammar=`, with the same logits, so the chosen token, and with a seed the random draw, is the one
`grammar=` gives.

Import this module only once llama_cpp imports (`labkit.model.local` checks that first).
"""

import ctypes

import llama_cpp
import numpy as np

_TOKEN = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)


class GrammarFilter:
    """One completion's grammar as a logits processor: `logits_processor=[GrammarFilter(llama, gbnf, k)]`.

    Built for one completion (the grammar's state is the reply so far) and closed after it. `gbnf` is the
    grammar's text with a `root` rule; `top_k` is how many tokens the sampler can still choose among: 1 at
    temperature 0, its `top_k` otherwise. ValueError if llama.cpp cannot parse the grammar."""

    def __init__(self, llama: llama_cpp.Llama, gbnf: bytes, top_k: int):
        vocab = llama_cpp.llama_model_get_vocab(llama.model)
        self._sampler = llama_cpp.llama_sampler_init_grammar(vocab, gbnf, b"root")
        if not self._sampler:  # serves: ours — the grammar comes from our own schema
            raise ValueError("llama.cpp could not parse the grammar")
        self._top_k = top_k
        self._prompt: int | None = None  # tokens before the reply: the input at the first call
        self._accepted = 0  # reply tokens the grammar has been told of

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        """The logits for the next token: `scores` itself when the grammar allows every candidate, else a
        copy holding only the `top_k` best tokens the grammar allows (the rest at -inf)."""
        if self._prompt is None:
            self._prompt = len(input_ids)
        for token in input_ids[self._prompt + self._accepted :]:
            llama_cpp.llama_sampler_accept(self._sampler, int(token))
            self._accepted += 1
        size = self._top_k
        while True:
            best = _best(scores, size)
            allowed = self._allowed(best)
            if allowed.all():
                return scores
            # Widen by four until the top_k best allowed tokens are known; past ~1,000 a grammar that allows
            # few tokens here (a quote, a digit) is cheaper asked about the whole vocabulary at once.
            if allowed.sum() >= self._top_k or len(best) == len(scores):
                kept = best[allowed][: self._top_k]
                masked = np.full_like(scores, -np.inf)
                masked[kept] = scores[kept]
                return masked
            size = size * 4 if size < 1024 else len(scores)

    def _allowed(self, tokens: np.ndarray) -> np.ndarray:
        """Token by token, whether the grammar allows it next."""
        data = (llama_cpp.llama_token_data * len(tokens))()
        view = np.frombuffer(data, dtype=_TOKEN)
        view["id"] = tokens
        array = llama_cpp.llama_token_data_array(
            data=ctypes.cast(data, llama_cpp.llama_token_data_p), size=len(tokens), selected=-1, sorted=False
        )
        llama_cpp.llama_sampler_apply(self._sampler, ctypes.byref(array))  # a refused token's logit: -inf
        return view["logit"] != -np.inf

    def close(self) -> None:
        """Free the llama.cpp sampler (once; later calls do nothing)."""
        if self._sampler:
            llama_cpp.llama_sampler_free(self._sampler)
            self._sampler = None


def _best(scores: np.ndarray, size: int) -> np.ndarray:
    """The ids of the `size` highest logits and any tied with the last, best first (a lower id first among
    equals, as the greedy sampler chooses)."""
    whole = size >= len(scores)
    ids = np.arange(len(scores)) if whole else np.flatnonzero(scores >= np.partition(scores, -size)[-size])
    return ids[np.argsort(-scores[ids], kind="stable")]
