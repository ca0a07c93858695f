"""BFCL ``multi_turn_base`` with BFCL's executable backends (file system, messaging, trading, travel ...).

Each entry: several user turns, the involved classes with their initial configuration, and the
function docs of those classes (minus the entry's excluded functions) as its catalog. The backend
instantiates BFCL's own classes from ``bfcl_eval.eval_checker.multi_turn_eval.func_source_code`` and
calls their methods through an allowlist: the entry's documented function names that are public
methods of an involved class. No string is ever evaluated: the ground truth (``"cd(folder='x')"``) is
parsed with :mod:`ast` and its arguments read with ``ast.literal_eval``.

Judged like BFCL's state checker: after every user turn, every involved instance's public attributes
equal those after running that turn's ground truth. (BFCL also checks that the ground truth's results
appear among the model's, its response checker; surfbench checks states only.)
"""

from __future__ import annotations

import ast
import contextlib
import copy
import importlib
import inspect
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from surfbench.bench.contracts.backend import ToolError
from surfbench.bench.suites.suite import ExpectedCall, StateCheck, SuiteError, Task
from surfbench.tasks.bfcl.data import catalog_of, read_jsonl, union

PREFIX = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"
CLASSES = {  # BFCL's executable_backend_config: class -> (module, function-doc file)
    "GorillaFileSystem": ("gorilla_file_system", "gorilla_file_system.json"),
    "MathAPI": ("math_api", "math_api.json"),
    "MessageAPI": ("message_api", "message_api.json"),
    "TwitterAPI": ("posting_api", "posting_api.json"),
    "TicketAPI": ("ticket_api", "ticket_api.json"),
    "TradingBot": ("trading_bot", "trading_bot.json"),
    "TravelAPI": ("travel_booking", "travel_booking.json"),
    "VehicleControlAPI": ("vehicle_control", "vehicle_control.json"),
}
STATELESS = {"MathAPI"}
SCENARIOS: dict[str, dict[str, Any]] = {}
"""Entry id -> {initial_config, classes, functions}: what a backend needs to reset to an entry."""


def _instances(scenario: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for name in scenario["classes"]:
        if name not in CLASSES:
            raise SuiteError(f"BFCL class {name!r} is not one of the executable backends {sorted(CLASSES)}")
        module = importlib.import_module(f"{PREFIX}.{CLASSES[name][0]}")
        instance = getattr(module, name)()
        if name not in STATELESS:
            instance._load_scenario(copy.deepcopy(scenario["initial_config"].get(name, {})), long_context=False)
        out[name] = instance
    return out


def plain(value: Any, seen: set[int] | None = None) -> Any:
    """A JSON-able snapshot of an instance's public state (objects by their public attributes)."""
    seen = seen if seen is not None else set()
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if id(value) in seen:
        return "<ref>"
    if isinstance(value, Mapping):
        seen.add(id(value))
        return {str(k): plain(v, seen) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        seen.add(id(value))
        items = [plain(v, seen) for v in value]
        return sorted(items, key=json.dumps) if isinstance(value, set) else items
    if hasattr(value, "__dict__"):
        seen.add(id(value))
        return {k: plain(v, seen) for k, v in vars(value).items() if not k.startswith("_")}
    return str(value)


class MultiTurnBackend:
    """BFCL's classes for one entry; methods called through the entry's allowlist."""

    def __init__(self) -> None:
        self.instances: dict[str, Any] = {}
        self.methods: dict[str, Any] = {}

    def reset(self, scenario: str | None = None) -> None:
        if scenario not in SCENARIOS:
            raise ValueError(f"unknown BFCL multi-turn entry {scenario!r}")
        entry = SCENARIOS[scenario]
        self.instances = _instances(entry)
        allowed = set(entry["functions"])
        self.methods = {}
        for instance in self.instances.values():
            for name, method in inspect.getmembers(instance, predicate=inspect.ismethod):
                if name in allowed and not name.startswith("_"):
                    self.methods[name] = method

    def call(self, op: str, args: Mapping[str, Any]) -> Any:
        method = self.methods.get(op)
        if method is None:
            raise ToolError(f"no function {op!r} here")
        try:
            result = method(**copy.deepcopy(dict(args)))  # BFCL's methods may change their arguments
        except TypeError as exc:
            raise ToolError(str(exc)) from None
        except Exception as exc:  # BFCL's code choking on a value the schema allows: the model's error, as
            raise ToolError(f"Error during execution: {type(exc).__name__}: {exc}") from None  # BFCL reports it
        if isinstance(result, Mapping) and "error" in result and len(result) == 1:
            raise ToolError(str(result["error"]))
        return plain(result)

    def state(self) -> dict[str, Any]:
        return {name: plain(instance) for name, instance in self.instances.items()}


def parse_call(text: str) -> tuple[str, dict[str, Any], list[Any]]:
    """``"mv(source='a', destination='b')"`` -> (name, keyword args, positional args); literals only."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise SuiteError(f"BFCL ground truth {text!r}: not a call: {exc.msg}") from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise SuiteError(f"BFCL ground truth {text!r}: not a plain function call")
    try:
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
        positional = [ast.literal_eval(a) for a in node.args]
    except ValueError:
        raise SuiteError(f"BFCL ground truth {text!r}: arguments are not literals") from None
    return node.func.id, kwargs, positional


def _bind(backend: MultiTurnBackend, name: str, kwargs: dict[str, Any], positional: list[Any]) -> dict[str, Any]:
    method = backend.methods.get(name)
    if method is None or not positional:
        return kwargs
    params = [p for p in inspect.signature(method).parameters if p != "self"]
    return {**dict(zip(params, positional, strict=False)), **kwargs}


def multi_turn(category: str, data: Path) -> dict[str, Any]:
    path = data / f"BFCL_v4_{category}.json"
    entries = read_jsonl(path)
    truth = {row["id"]: row["ground_truth"] for row in read_jsonl(data / "possible_answer" / path.name)}
    docs: dict[str, list[dict[str, Any]]] = {}
    tasks, catalogs = [], []
    for i, entry in enumerate(entries):
        functions = []
        for name in entry["involved_classes"]:
            if name not in docs:
                docs[name] = read_jsonl(data / "multi_turn_func_doc" / CLASSES[name][1])
            functions += [f for f in docs[name] if f["name"] not in set(entry.get("excluded_function", []))]
        source = f"{path}#{entry['id']}"
        catalog = catalog_of(functions, source)
        catalogs.append(catalog)
        SCENARIOS[entry["id"]] = {
            "initial_config": entry.get("initial_config", {}),
            "classes": entry["involved_classes"],
            "functions": [f["name"] for f in functions],
        }
        backend = MultiTurnBackend()
        backend.reset(entry["id"])
        expected, checks = [], []
        for turn, turn_calls in enumerate(truth[entry["id"]]):
            for text in turn_calls:
                name, kwargs, positional = parse_call(text)
                args = _bind(backend, name, kwargs, positional)
                expected.append(ExpectedCall(name, {k: [v] for k, v in args.items()}, oracle_args=args, turn=turn))
                with contextlib.suppress(ToolError):  # BFCL's ground truth has calls that fail; the state counts
                    backend.call(name, args)
            # BFCL's state checker: after every turn, each instance as the ground truth left it
            checks += [StateCheck((n,), equals=v, has_equals=True, turn=turn) for n, v in backend.state().items()]
        turns = tuple(" ".join(str(m.get("content", "")) for m in turn) for turn in entry["question"])
        tasks.append(
            Task(
                id=entry["id"],
                turns=turns,
                split="dev" if i % 5 == 0 else "test",
                tags=("multi", "multi-turn"),
                scenario=entry["id"],
                expected=tuple(expected),
                state=tuple(checks),
                require_calls=False,
                catalog=catalog,
                meta={"bfcl_category": category, "functions": functions},
                source=str(path),
            )
        )
    return {
        "catalog": union(catalogs, str(path)),
        "tasks": tasks,
        "max_steps": 20,  # per user turn, as BFCL's MAXIMUM_STEP_LIMIT
        "steps_per": "turn",
        "backend": "surfbench.tasks.bfcl.multi_turn:MultiTurnBackend",
    }
