"""Generator.generate_tokens: one prompt's tokens as an iterator, yielded as they are generated. The
generation runs on a thread of its own (the C++ call releases the GIL) and hands each token to the
iterator through a queue, by generate's on_token callback."""

import queue
import threading

_END = object()


class _Closed(Exception):
    """Raised in the callback once the iterator is closed: it stops the generation."""


def generate_tokens(self, prompt, **kwargs):
    """generate_tokens(self, prompt, **kwargs) -> Iterator[int]

    The token ids of one prompt's continuation, each as soon as it is generated (greedy search or
    sampling: beam=1); the generation starts at once, on a thread of its own. prompt: text (as
    generate) or a list of token ids (as generate_ids); kwargs: generate's keywords but on_token,
    whose errors are raised by the first next(). Closing the iterator once it has started (close(),
    or a break out of a for loop over it) stops the generation."""
    if "on_token" in kwargs:
        raise TypeError("Generator.generate_tokens() takes no 'on_token': it yields the tokens itself")
    tokens = queue.Queue()
    closed = threading.Event()
    by_ids = not isinstance(prompt, (str, bytes))
    call = self.generate_ids if by_ids else self.generate

    def on_token(_index, token):
        if closed.is_set():
            raise _Closed()
        tokens.put(token)

    def run():
        try:
            call([list(prompt)] if by_ids else [prompt], on_token=on_token, **kwargs)
            tokens.put(_END)
        except _Closed:
            pass
        except BaseException as e:  # handed to the consumer, raised there
            tokens.put(e)

    threading.Thread(target=run, name="generate_tokens", daemon=True).start()
    return _yield_tokens(tokens, closed)


def _yield_tokens(tokens, closed):
    """The tokens of the queue until the end; a failure of the generation is raised here."""
    try:
        while True:
            item = tokens.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        closed.set()
