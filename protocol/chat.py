"""Chat-template tokens: the prompt's ids, the end-of-turn token, the ids between two sampled turns.

    python -c "import protocol.chat as c, models; t = models.load_tokenizer('smollm2-135m'); print(c.eot_id(t))"

Assumed (ChatML, Llama-3; both helpers check it): a special token closes an assistant turn right after the
content, so the tokens after it do not depend on what was sampled and can be encoded alone.
"""

from __future__ import annotations

_SENT = "\u2af7DIDPO-SENTINEL\u2af8"


def _render(tokenizer, messages: list[dict], gen: bool) -> str:
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=gen)


def _after_assistant(tokenizer, user: str | None) -> str:
    conv = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
            {"role": "assistant", "content": _SENT}]
    if user is not None:
        conv.append({"role": "user", "content": user})
    text = _render(tokenizer, conv, user is not None)
    if text.count(_SENT) != 1:
        raise ValueError("the chat template does not render the assistant content verbatim; "
                         "protocol.chat.observation_ids needs a template that does")
    return text[text.index(_SENT) + len(_SENT):]


def eot_id(tokenizer) -> int:
    """The token that ends an assistant turn in this chat template (ChatML: <|im_end|>)."""
    ids = tokenizer.encode(_after_assistant(tokenizer, None), add_special_tokens=False)
    if not ids or tokenizer.convert_ids_to_tokens(ids[0]) not in tokenizer.get_added_vocab():
        raise ValueError("the chat template does not close assistant turns with a special token; "
                         "token-exact observation deltas are impossible with it")
    return ids[0]


def prompt_ids(tokenizer, messages: list[dict]) -> list[int]:
    """Token ids of the prompt, with the chat template and the assistant header (add_generation_prompt)."""
    return tokenizer.encode(_render(tokenizer, messages, True), add_special_tokens=False)


def observation_ids(tokenizer, observation: str, ended_with_eot: bool) -> list[int]:
    """Template delta after a sampled assistant turn: [end-of-turn] + user observation + assistant header."""
    ids = tokenizer.encode(_after_assistant(tokenizer, observation), add_special_tokens=False)
    eot = eot_id(tokenizer)
    if not ids or ids[0] != eot:
        raise ValueError("the chat template does not start the text after an assistant turn with its "
                         "end-of-turn token; token-exact observation deltas are impossible with it")
    return ids[1:] if ended_with_eot else ids
