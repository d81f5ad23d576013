"""Argument errors as Python words them, for the extension's functions and methods: where pybind11
refuses a call (its "incompatible function arguments" and the whole signature), a TypeError naming
the function and what is wrong: an unexpected keyword (with the nearest real one), a missing or
surplus argument, or the argument whose type does not fit ("argument 'lines' must be a list of str,
not str"). Calls that succeed are not touched; nothing is checked unless pybind11 refused the call."""

import collections.abc
import difflib
import functools
import re

# The names other translation toolkits (CTranslate2, fairseq, Hugging Face) give these keywords.
_OTHER_NAMES = {
    "beam_size": "beam",
    "num_beams": "beam",
    "num_hypotheses": "n_best",
    "nbest": "n_best",
    "num_return_sequences": "n_best",
    "return_attention": "attention",
    "max_batch_size": "batch_size",
    "max_input_length": "max_input_tokens",
    "return_score": "return_scores",
    "src_lang": "source_lang",
    "tgt_lang": "target_lang",
}

_LIST = re.compile(r"(?:List|list|Sequence)\[(.*)\]")
_OPTIONAL = re.compile(r"Optional\[(.*)\]")
_SCALAR_NAMES = {"SupportsInt": "int", "SupportsIndex": "int", "SupportsFloat": "float"}


def _accepts_int(v):
    return not isinstance(v, float) and (hasattr(type(v), "__index__") or hasattr(type(v), "__int__"))


def _accepts_float(v):
    return hasattr(type(v), "__float__") or hasattr(type(v), "__index__")


def _accepts_bool(v):
    return v is None or isinstance(v, (bool, int, float)) or hasattr(type(v), "__bool__")


# What pybind11's casters take (with conversion) for the scalar types of the signatures.
_SCALARS = {
    "int": _accepts_int,
    "float": _accepts_float,
    "bool": _accepts_bool,
    "str": lambda v: isinstance(v, (str, bytes, bytearray)),
}


class _Parameter:
    def __init__(self, item):
        self.var_keyword = item.startswith("**")
        self.var_positional = item.startswith("*") and not self.var_keyword
        head, _, default = item.lstrip("*").partition(" = ")
        name, _, annotation = head.partition(":")
        self.name = name.strip()
        self.annotation = _plain(annotation)
        self.required = not default and not self.var_keyword and not self.var_positional


def _plain(annotation):
    """An annotation without its modules' prefixes, Optional[X] as X | None."""
    a = annotation.strip().replace("typing.", "").replace("collections.abc.", "")
    m = _OPTIONAL.fullmatch(a)
    return m.group(1) + " | None" if m else _SCALAR_NAMES.get(a, a)


def _split(inside):
    """A signature's items, split at the commas outside brackets and quotes."""
    items, depth, quote, item = [], 0, None, ""
    for ch in inside + ",":
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif ch == "," and depth == 0:
            if item.strip():
                items.append(item.strip())
            item = ""
            continue
        item += ch
    return items


def _signature(function):
    """(positional parameters, keyword-only ones, whether **kwargs is taken) from pybind11's first
    docstring line, "name(a: T, *, b: U = 1) -> R"; None for one it cannot read (an overload set)."""
    line = (function.__doc__ or "").split("\n", 1)[0]
    if "(" not in line or ")" not in line:
        return None
    positional, keyword, kwargs, star = [], [], False, False
    for item in _split(line[line.index("(") + 1 : line.rindex(")")]):
        if item == "*":
            star = True
            continue
        p = _Parameter(item)
        if p.var_positional:
            return None
        if p.var_keyword:
            kwargs = True
        else:
            (keyword if star else positional).append(p)
    return positional, keyword, kwargs


def _describe(annotation, plural=False):
    """An annotation in words: List[List[str]] → "a list of lists of str"."""
    if annotation.endswith(" | None"):
        return _describe(annotation[: -len(" | None")], plural) + " or None"
    m = _LIST.fullmatch(annotation)
    if m:
        return ("lists of " if plural else "a list of ") + _describe(m.group(1), plural=True)
    return annotation


def _misfit(value, annotation, where):
    """(where, the value) of the first part of value that pybind11 cannot take as annotation; None
    when it all fits or the annotation is not one this module understands (it then says nothing)."""
    if annotation.endswith(" | None"):
        return None if value is None else _misfit(value, annotation[: -len(" | None")], where)
    m = _LIST.fullmatch(annotation)
    if m:
        if isinstance(value, (str, bytes, bytearray, dict)) or not hasattr(type(value), "__getitem__"):
            return where, value
        if isinstance(value, collections.abc.Iterable):
            for i, item in enumerate(value):
                found = _misfit(item, m.group(1), f"{where}[{i}]")
                if found:
                    return found
        return None
    accepts = _SCALARS.get(annotation)
    return None if accepts is None or accepts(value) else (where, value)


def _nearest(name, names):
    if name in _OTHER_NAMES and _OTHER_NAMES[name] in names:
        return f"; did you mean '{_OTHER_NAMES[name]}'?"
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def _keyword_problem(title, positional, keyword, kwargs, args, given):
    names = [p.name for p in positional + keyword]
    for key in given:
        if key not in names and not kwargs:
            return f"{title} got an unexpected keyword argument '{key}'" + _nearest(key, names)
    if len(args) > len(positional):
        n = len(positional)
        hint = f" (the options are keyword-only: {keyword[0].name}=...)" if keyword else ""
        return f"{title} takes {n} positional argument{'' if n == 1 else 's'} but {len(args)} were given{hint}"
    for p, _ in zip(positional, args):
        if p.name in given:
            return f"{title} got multiple values for argument '{p.name}'"
    for p in positional[len(args) :] + keyword:
        if p.required and p.name not in given:
            return f"{title} missing required argument: '{p.name}'"
    return None


def _type_problem(title, parameters, values):
    for p in parameters:
        if p.name not in values:
            continue
        value = values[p.name]
        found = _misfit(value, p.annotation, p.name)
        if not found:
            continue
        where, part = found
        message = f"{title} argument '{p.name}' must be {_describe(p.annotation)}"
        if where == p.name:
            message += f", not {type(part).__name__}"
        else:
            message += f"; {where} is {type(part).__name__}"
        items = _LIST.fullmatch(p.annotation.split(" | ")[0])
        if where == p.name and isinstance(part, (str, bytes)) and items and items.group(1) in ("str", "object"):
            message += " (for a single one, a list of one)"  # one text or path where a list is taken
        return message
    return None


def explain(function, title, args, kwargs):
    """Why pybind11 refused function(*args, **kwargs), as Python's message for such a call would
    say it; a short fallback when the reason is not one this module tells apart (a number out of
    range for its C++ type)."""
    signature = _signature(function)
    if signature is None:
        return f"{title} cannot take these arguments; its signature: {(function.__doc__ or '').splitlines()[0]}"
    positional, keyword, kwargs_taken = signature
    problem = _keyword_problem(title, positional, keyword, kwargs_taken, args, kwargs)
    if problem:
        return problem
    values = dict(zip((p.name for p in positional), args))
    values.update(kwargs)
    problem = _type_problem(title, positional + keyword, values)
    if problem:
        return problem
    given = ", ".join([type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()])
    return f"{title} cannot convert its arguments ({given}): a number out of range for its type?"


def _refused(error):
    text = str(error)
    return "incompatible function arguments" in text or "incompatible constructor arguments" in text


def pythonic(function, title):
    """function, whose refusals of its arguments raise explain()'s TypeError instead of pybind11's."""

    @functools.wraps(function)
    def call(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except TypeError as e:
            if not _refused(e):
                raise
            message = explain(function, title, args, kwargs)
        raise TypeError(message) from None

    return call


def wrap_module(module, classes, functions):
    """The module's functions wrapped by pythonic (a dict by name), and every public method and
    __init__ of its classes wrapped in place."""
    for cls in classes:
        for name, attribute in list(vars(cls).items()):
            if type(attribute).__name__ == "instancemethod" and (name == "__init__" or not name.startswith("_")):
                title = f"{cls.__name__}()" if name == "__init__" else f"{cls.__name__}.{name}()"
                setattr(cls, name, pythonic(getattr(cls, name), title))
    return {name: pythonic(getattr(module, name), f"{name}()") for name in functions}
