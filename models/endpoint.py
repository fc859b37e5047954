"""A model behind an OpenAI-compatible chat-completions endpoint (vllm serve, SGLang, a hosted API).

    vllm serve Qwen/Qwen2.5-Coder-7B-Instruct --port 8000 &
    python eval.py --bench livecodebench --endpoint http://localhost:8000/v1 --model Qwen/Qwen2.5-Coder-7B-Instruct

`complete(url, model, bodies, ...)`: one POST {url}/chat/completions per request from `workers` threads, the
replies' texts in order. Connection errors, timeouts, 429 and 5xx are retried with exponential backoff; the key is
$OPENAI_API_KEY. eval.py resumes (asks only for the samples it has not saved).
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

import requests

RETRY = {429, 500, 502, 503, 504}
_sleep = time.sleep  # the backoff's wait (tests record it instead)


class EndpointError(ValueError):
    """The endpoint refused a request for good, or kept failing past the retries."""


def complete(url: str, model: str, bodies: list[dict], workers: int = 8, retries: int = 5,
             timeout: float = 600.0, backoff: float = 1.0) -> list[str]:
    """The reply text of each request body ({"messages", "temperature", "top_p", "max_tokens", "seed"}), in order."""
    endpoint = url.rstrip("/") + "/chat/completions"
    headers = {"Content-Type": "application/json"}
    if os.environ.get("OPENAI_API_KEY"):
        headers["Authorization"] = f"Bearer {os.environ['OPENAI_API_KEY']}"

    def one(req: dict) -> str:
        body = {"model": model, "n": 1, **req}
        for attempt in range(retries + 1):
            try:
                r = requests.post(endpoint, json=body, headers=headers, timeout=timeout)
            except (requests.ConnectionError, requests.Timeout) as e:
                why = f"{type(e).__name__}: {e}"
            else:
                if r.status_code == 200:
                    try:
                        return r.json()["choices"][0]["message"]["content"] or ""
                    except (ValueError, KeyError, IndexError, TypeError) as e:
                        raise EndpointError(f"{endpoint} did not answer in the chat-completions schema ({e})") from None
                why = f"HTTP {r.status_code}: {r.text[:200]}"
                if r.status_code not in RETRY:
                    raise EndpointError(f"{endpoint} refused the request ({why}); check --model and the server")
            if attempt < retries:
                _sleep(backoff * 2 ** attempt)
        raise EndpointError(f"{endpoint} failed {retries + 1} times (last: {why}); is the server up?")

    with ThreadPoolExecutor(max(1, workers)) as pool:
        return list(pool.map(one, bodies))
