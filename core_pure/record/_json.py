"""Strict JSON for safetensors headers: the parsed value plus the top-level key order.

``loads(text)`` returns ``(value, keys)`` where ``keys`` lists the top-level object's keys in the
order the text gives them (``None`` when the value is not an object). It raises ``JsonError`` for
anything RFC 8259 rejects, for a key repeated inside one object (``json.loads`` keeps the last one
silently), for NaN/Infinity, for numbers longer than ``MAX_NUMBER`` characters, for lone surrogate
escapes and for nesting deeper than ``MAX_DEPTH``.

Two implementations give the same results:
- CPython: the C ``json`` module with an ``object_pairs_hook`` (fast on large headers);
- elsewhere (MicroPython, whose ``json`` keeps no order, cannot report duplicates and accepts
  ``{"a" 1}``, ``{1: 2}``, trailing commas and trailing garbage): ``parse`` below, an iterative
  parser (MicroPython stops recursion after about 150 frames).
"""
MAX_DEPTH = 64
MAX_NUMBER = 64  # characters in one number literal; a u64 offset needs 20

_WS = " \t\n\r"
_DIGITS = "0123456789"
_HEX = "0123456789abcdefABCDEF"
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class JsonError(Exception):
    """Why the text is not acceptable JSON, and where (a character index)."""

    # args only: MicroPython's Exception has no __init__ to chain to

    def __str__(self):
        msg = self.args[0] if self.args else ""
        pos = self.args[1] if len(self.args) > 1 else None
        return msg if pos is None else "%s (at character %d)" % (msg, pos)


def _skip(s, i, n):
    while i < n and s[i] in _WS:
        i += 1
    return i


def _check_raw(piece, start):
    # JSON strings may not hold raw control characters; min() scans at C speed
    if piece and min(piece) < " ":
        k = 0
        while piece[k] >= " ":
            k += 1
        raise JsonError("control character %r inside a string" % piece[k], start + k)


def _string(s, i, n):
    """(the string that starts with the quote at ``i``, the index after its closing quote)."""
    j = s.find('"', i + 1)
    if j < 0:
        raise JsonError("unterminated string", i)
    piece = s[i + 1:j]
    if "\\" not in piece:
        _check_raw(piece, i + 1)
        return piece, j + 1
    out = []
    k = i + 1
    while True:
        q = s.find('"', k)
        b = s.find("\\", k)
        if q < 0:
            raise JsonError("unterminated string", i)
        if b < 0 or q < b:
            piece = s[k:q]
            _check_raw(piece, k)
            out.append(piece)
            return "".join(out), q + 1
        piece = s[k:b]
        _check_raw(piece, k)
        out.append(piece)
        if b + 1 >= n:
            raise JsonError("unterminated string", i)
        esc = s[b + 1]
        if esc in _ESCAPES:
            out.append(_ESCAPES[esc])
            k = b + 2
        elif esc == "u":
            cp = _hex4(s, b + 2, n)
            k = b + 6
            if 0xDC00 <= cp <= 0xDFFF:
                raise JsonError("lone low surrogate \\u%04x" % cp, b)
            if 0xD800 <= cp <= 0xDBFF:
                if s[k:k + 2] != "\\u":
                    raise JsonError("lone high surrogate \\u%04x" % cp, b)
                lo = _hex4(s, k + 2, n)
                if not 0xDC00 <= lo <= 0xDFFF:
                    raise JsonError("high surrogate \\u%04x not followed by a low one" % cp, b)
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00)
                k += 6
            out.append(chr(cp))
        else:
            raise JsonError("invalid escape \\%s" % esc, b)


def _hex4(s, i, n):
    h = s[i:i + 4]
    if len(h) != 4:
        raise JsonError("truncated \\u escape", i)
    for c in h:
        if c not in _HEX:
            raise JsonError("invalid \\u escape %r" % h, i)
    return int(h, 16)


def _digits(s, j, n, start):
    k = j
    while k < n and s[k] in _DIGITS:
        k += 1
        if k - start > MAX_NUMBER:
            raise JsonError("number longer than %d characters" % MAX_NUMBER, start)
    return k


def _number(s, i, n):
    j = i
    if s[j] == "-":
        j += 1
    if j < n and s[j] == "0":
        j += 1
    elif j < n and s[j] in "123456789":
        j = _digits(s, j, n, i)
    else:
        raise JsonError("invalid number", i)
    is_float = False
    if j < n and s[j] == ".":
        k = _digits(s, j + 1, n, i)
        if k == j + 1:
            raise JsonError("invalid number: no digit after '.'", i)
        j, is_float = k, True
    if j < n and s[j] in "eE":
        j += 1
        if j < n and s[j] in "+-":
            j += 1
        k = _digits(s, j, n, i)
        if k == j:
            raise JsonError("invalid number: no digit in the exponent", i)
        j, is_float = k, True
    if j - i > MAX_NUMBER:
        raise JsonError("number longer than %d characters" % MAX_NUMBER, i)
    lit = s[i:j]
    return (float(lit) if is_float else int(lit)), j


def _key(s, i, n, obj, order):
    """Parse ``"key" :`` at ``i``; returns (key, index of the value)."""
    if i >= n or s[i] != '"':
        raise JsonError("expected a string key", i)
    key, i = _string(s, i, n)
    if key in obj:
        raise JsonError("duplicate key %r" % key, i)
    order.append(key)
    i = _skip(s, i, n)
    if i >= n or s[i] != ":":
        raise JsonError("expected ':' after key %r" % key, i)
    return key, _skip(s, i + 1, n)


def parse(s):
    """``(value, top-level keys or None)`` of the JSON text ``s``, in pure Python, iteratively."""
    n = len(s)
    i = _skip(s, 0, n)
    stack = []  # frames: [is_object, container, pending key, key order]
    while True:
        # a value starts at i
        if i >= n:
            raise JsonError("unexpected end of text", i)
        c = s[i]
        if c == "{" or c == "[":
            if len(stack) >= MAX_DEPTH:
                raise JsonError("nested deeper than %d levels" % MAX_DEPTH, i)
            is_obj = c == "{"
            close = "}" if is_obj else "]"
            j = _skip(s, i + 1, n)
            if j < n and s[j] == close:
                value, i = ({} if is_obj else []), j + 1
            elif is_obj:
                frame = [True, {}, None, []]
                frame[2], i = _key(s, j, n, frame[1], frame[3])
                stack.append(frame)
                continue
            else:
                stack.append([False, [], None, None])
                i = j
                continue
        elif c == '"':
            value, i = _string(s, i, n)
        elif c == "-" or c in _DIGITS:
            value, i = _number(s, i, n)
        elif s.startswith("true", i):
            value, i = True, i + 4
        elif s.startswith("false", i):
            value, i = False, i + 5
        elif s.startswith("null", i):
            value, i = None, i + 4
        else:
            raise JsonError("unexpected character %r" % c, i)
        # the value is complete: store it in its container, closing containers that end here
        while True:
            if not stack:
                i = _skip(s, i, n)
                if i != n:
                    raise JsonError("extra data after the JSON value", i)
                return value, ([] if type(value) is dict else None)  # a dict here is "{}"
            frame = stack[-1]
            if frame[0]:
                frame[1][frame[2]] = value
            else:
                frame[1].append(value)
            i = _skip(s, i, n)
            if i >= n:
                raise JsonError("unexpected end of text", i)
            c = s[i]
            if c == ",":
                i = _skip(s, i + 1, n)
                if frame[0]:
                    frame[2], i = _key(s, i, n, frame[1], frame[3])
                break
            if c == ("}" if frame[0] else "]"):
                i += 1
                stack.pop()
                value = frame[1]
                if not stack:
                    i = _skip(s, i, n)
                    if i != n:
                        raise JsonError("extra data after the JSON value", i)
                    return value, frame[3]
                continue
            raise JsonError("expected ',' or '%s'" % ("}" if frame[0] else "]"), i)


# -- CPython: the C parser, made as strict as parse() -----------------------------------------

class _Reject(Exception):
    pass


def _loads_c(text):
    import json
    last = [None]

    def pairs_hook(pairs):
        d = {}
        for k, v in pairs:
            if k in d:
                raise _Reject("duplicate key %r" % k)
            d[k] = v
        last[0] = pairs
        return d

    def constant(name):
        raise _Reject("%s is not a JSON number" % name)

    def number(kind):
        def convert(lit):
            if len(lit) > MAX_NUMBER:
                raise _Reject("number longer than %d characters" % MAX_NUMBER)
            return kind(lit)
        return convert

    try:
        value = json.loads(text, object_pairs_hook=pairs_hook, parse_constant=constant,
                           parse_int=number(int), parse_float=number(float))
    except _Reject as e:
        raise JsonError(str(e))
    except RecursionError:
        raise JsonError("nested too deeply")
    except ValueError as e:  # json.JSONDecodeError
        raise JsonError(getattr(e, "msg", str(e)), getattr(e, "pos", None))
    # json.loads accepts "\\ud800" alone; parse() refuses lone surrogates, so check strings then
    _check_tree(value, "\\ud" in text or "\\uD" in text)
    return value, ([k for k, _ in last[0]] if type(value) is dict else None)


def _check_tree(value, surrogates):
    # parse() refuses more than MAX_DEPTH levels and lone surrogates; refuse the same here
    todo = [(value, 1)]
    while todo:
        v, d = todo.pop()
        if type(v) is dict:
            items = v.values()
            if surrogates:
                for k in v:
                    _encodable(k)
        elif type(v) is list:
            items = v
        else:
            if surrogates and type(v) is str:
                _encodable(v)
            continue
        if d > MAX_DEPTH:
            raise JsonError("nested deeper than %d levels" % MAX_DEPTH)
        for x in items:
            todo.append((x, d + 1))


def _encodable(s):
    try:
        s.encode("utf-8")
    except UnicodeError:
        raise JsonError("lone surrogate escape in %r" % s)


def _has_pairs_hook():
    try:
        import json
        json.loads("{}", object_pairs_hook=dict)
        return True
    except Exception:  # MicroPython: json.loads takes no keyword arguments
        return False


if _has_pairs_hook():
    loads = _loads_c
else:
    loads = parse
