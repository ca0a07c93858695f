"""The program side of code mode: runs inside the sandbox, never imported by the harness.

Its source is handed to ``python3 -I -S -c`` with two file descriptors (requests, replies). It reads
``{"functions": [...], "meta": [...], "code": "..."}`` from stdin, defines each SDK function as a
generic caller (every keyword goes to the harness, which validates it against the operation's own
schema), runs the program, and ends with one ``{"done": ...}`` frame: the value of the program's last
expression, or its error (``code_syntax_error``, ``code_exception``). A name the program calls that the
SDK does not define is sent too: the harness records it as ``not_exposed`` and it raises here.

Start-up time is the cost of every program, so the happy path imports only built-in modules (``_json``,
``_ast``, ``io``): no ``json``, ``ast``, ``os`` or ``traceback`` (they pull in ``re``, ``enum``, ...).
"""

import _ast
import _json
import builtins
import sys

VALUE_CHARS = 16384


class _Scanner:
    """The settings the C JSON scanner reads (what ``json.JSONDecoder`` would hand it)."""

    strict = False
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float
    memo: dict = {}


_scan = _json.make_scanner(_Scanner())  # type: ignore[arg-type]  # duck-typed settings, as json does
_quote = _json.encode_basestring_ascii


def _loads(text: str) -> object:
    return _scan(text, 0)[0]


def _dumps(value: object) -> str:
    """Compact JSON; what JSON cannot hold goes as its repr (as ``json.dumps(default=repr)`` would)."""
    if value is None or value is True or value is False:
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return float.__repr__(value) if value == value and abs(value) != float("inf") else "null"
    if isinstance(value, list | tuple):
        return "[" + ",".join(map(_dumps, value)) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(_quote(str(k)) + ":" + _dumps(v) for k, v in value.items()) + "}"
    return _quote(repr(value))


class SDKError(Exception):
    """An SDK call failed: the message is the harness's teaching error (or the backend's error)."""


class _Channel:
    def __init__(self, requests: int, replies: int) -> None:
        self.out = open(requests, "wb", buffering=0)  # noqa: SIM115 - open for the life of the program
        self.inp = open(replies, "rb")  # noqa: SIM115
        self.calls = 0

    def send(self, frame: dict) -> None:
        self.out.write(_dumps(frame).encode("ascii") + b"\n")

    def call(self, fn: str, args: tuple, kwargs: dict) -> object:
        self.calls += 1
        self.send({"id": self.calls, "fn": fn, "args": list(args), "kwargs": kwargs})
        line = self.inp.readline()
        if not line:
            raise SDKError("the SDK channel is closed: no more calls in this program")
        reply = _loads(line.decode("utf-8", "replace"))
        if not isinstance(reply, dict):
            raise SDKError("the SDK channel sent a malformed reply")
        if reply.get("ok"):
            return reply.get("value")
        raise SDKError(reply.get("error") or "the call failed")


def _function(channel: _Channel, name: str) -> object:
    def call(*args: object, **kwargs: object) -> object:
        return channel.call(name, args, kwargs)

    call.__name__ = call.__qualname__ = name
    return call


class _Missing:
    """A name the program uses that nothing defines: calling it asks the harness (recorded), else NameError."""

    def __init__(self, channel: _Channel, name: str) -> None:
        self._channel, self._name = channel, name

    def __call__(self, *args: object, **kwargs: object) -> object:
        return self._channel.call(self._name, args, kwargs)

    def _undefined(self, *_: object) -> object:
        raise NameError(f"name {self._name!r} is not defined")

    __repr__ = __str__ = __bool__ = __iter__ = __len__ = __index__ = __int__ = __float__ = _undefined  # type: ignore
    __add__ = __radd__ = __sub__ = __mul__ = __getitem__ = __eq__ = __lt__ = __gt__ = _undefined  # type: ignore
    __hash__ = None  # type: ignore


class _Globals(dict):
    """The program's globals: builtins first, then a missing name becomes a recorded SDK call if called."""

    def __init__(self, channel: _Channel, values: dict) -> None:
        super().__init__(values)
        self._channel = channel

    def __missing__(self, name: str) -> object:
        if hasattr(builtins, name):
            return getattr(builtins, name)
        if name.startswith("__"):
            raise KeyError(name)
        return _Missing(self._channel, name)


class _Module:
    """The SDK as a module object too (``sdk.issue_list(...)``)."""

    def __init__(self, functions: dict, channel: _Channel) -> None:
        self.__dict__.update(functions)
        self._channel = channel

    def __getattr__(self, name: str) -> object:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Missing(self._channel, name)


def _value(value: object) -> str:
    return repr(value)[:VALUE_CHARS]


def main() -> None:
    channel = _Channel(int(sys.argv[1]), int(sys.argv[2]))
    payload = _loads(sys.stdin.buffer.read().decode("utf-8"))
    assert isinstance(payload, dict)
    sys.stdin = open("/dev/null")  # noqa: SIM115
    functions = {name: _function(channel, name) for name in payload["functions"] + payload["meta"]}
    scope = _Globals(channel, {"__name__": "__main__", "__builtins__": builtins, "SDKError": SDKError})
    scope.update(functions)
    scope["sdk"] = _Module(functions, channel)
    try:
        tree: _ast.Module = compile(payload["code"], "<program>", "exec", _ast.PyCF_ONLY_AST)  # type: ignore[assignment]
    except (SyntaxError, ValueError) as exc:
        channel.send({"done": True, "error_type": "code_syntax_error", "error": _syntax(exc)})
        return
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], _ast.Expr) else None
    assert last is None or isinstance(last, _ast.Expr)
    value = None
    try:
        exec(compile(tree, "<program>", "exec"), scope)  # noqa: S102 - the program, inside the sandbox
        value = eval(compile(_ast.Expression(last.value), "<program>", "eval"), scope) if last else None  # noqa: S307
    except SystemExit:
        pass
    except BaseException as exc:  # noqa: BLE001 - any failure of the program is its result
        sys.stdout.flush()
        import linecache
        import traceback

        code = payload["code"]
        linecache.cache["<program>"] = (len(code), None, code.splitlines(True), "<program>")  # lines in tracebacks
        lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
        text = "".join(line for line in lines if 'File "<string>"' not in line)
        channel.send({"done": True, "error_type": "code_exception", "error": text[-4000:]})
        return
    sys.stdout.flush()
    channel.send({"done": True, "value": None if value is None else _value(value)})


def _syntax(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
        shown = (exc.text or "").rstrip("\n")
        return f"SyntaxError: {exc.msg} ({where})" + (f"\n    {shown}" if shown else "")
    return f"{type(exc).__name__}: {exc}"


if __name__ == "__main__":
    main()
