"""A compiled model (``.tcx``) as a tdb target: its graph nodes in order, each an npu
kernel run on the debugger's simulator, a host call, or a free view.

The debugger lays the executable's DDR arena out itself (from :data:`ARENA_BASE`, the
address the npu device hands out first), writes the constants and inputs, and then
runs node after node: an npu node loads its kernel and argument block as the runtime's
launch does and is stepped by instructions; a host node reads its buffers from the
simulated DDR, calls the ``c`` function and writes its outputs back, as one step; a
view (Reshape, Flatten, ...) has no code and only gives its input's bytes a new name
and shape. Graph values are found by their ONNX names through the executable's debug
info (``inputs``, ``outputs`` and ``views`` of each step, docs/executable.md).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from .debug_info import read_debug_info
from .target import ARG_BLOCK_FROM_END, KernelModuleTarget, Symbol, Target, TargetError

if TYPE_CHECKING:
    import numpy.typing as npt

    from ..arch import Program
    from ..runtime import Executable
    from ..sim import Simulator

ARENA_BASE = 0x10000  # runtime::kNpuHeapBase: the first address the npu device allocates


class Value:
    """A graph value: where its bytes are (a buffer of the arena) and its type."""

    def __init__(self, name: str, buffer: int, shape: Sequence[int], dtype: npt.DTypeLike,
                 producer: int | None = None) -> None:
        self.name, self.buffer, self.shape, self.dtype = name, buffer, tuple(shape), np.dtype(dtype)
        self.producer = producer  # index of the node that writes it; None: an input or a constant

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


class Member:
    """A member of a layer group's step, as its debug entry records it: its code per core
    (``pc``: {core: [(begin, end), ...]}), the values it reads and where each value it
    writes lives (``out``: places, docs/executable.md)."""

    def __init__(self, index: int, record: Mapping[str, Any]) -> None:
        self.index, self.name, self.op = index, record["node"], record["op"]
        self.pc: dict[int, list[tuple[int, int]]] = record["pc"]
        self.inputs: list[str] = list(record["in"])
        self.places: list[dict[str, Any]] = list(record["out"])
        self.outputs = [p["value"] for p in self.places]

    def begin(self, core: int) -> int:
        """The first instruction of the member's code on ``core``."""
        return min(b for b, _ in self.pc[core])

    def end(self, core: int) -> int:
        """The instruction after the member's code on ``core``: passing it, the core is done."""
        return max(e for _, e in self.pc[core])

    def contains(self, core: int, pc: int) -> bool:
        return any(b <= pc < e for b, e in self.pc.get(core, ()))

    def describe(self) -> str:
        return f"`{self.name}` ({self.op})"


class Node:
    """One node of the model in execution order: ``where`` is npu, host or view."""

    def __init__(self, index: int, where: str, name: str, onnx_name: str, op_type: str, inputs: list[str],
                 outputs: list[str], step: Mapping[str, Any] | None = None) -> None:
        self.index, self.where, self.name, self.onnx_name, self.op_type = index, where, name, onnx_name, op_type
        self.inputs, self.outputs = list(inputs), list(outputs)
        self.step = step          # the executable's step (dict), None for a view
        self.step_index = None    # the step's index in the executable, None for a view
        self.kernel = None        # KernelModuleTarget of an npu node (made when first needed)
        self.module = None
        self.fused: list[tuple[str, str]] = []  # (name, op type) of the nodes fused into it
        self.members: list[tuple[str, str]] = []  # a layer group's: (name, op type) of its nodes
        # a layer group's members with their code and output places, when the file records them
        self.group: list[Member] = []

    def member(self, name: str) -> Member | None:
        """The member of this node's layer group named ``name`` (None: not one, or the
        file does not record the members' code)."""
        return next((g for g in self.group if g.name == name), None)

    def computes(self, name: str) -> bool:
        """Whether this node is ONNX node or step ``name``, or computes it fused or as a
        member of its layer group."""
        return (name in (self.onnx_name, self.name) or any(f[0] == name for f in self.fused)
                or any(m[0] == name for m in self.members))

    def computes_op(self, op_type: str) -> bool:
        """Whether this node is of ``op_type`` or computes a node of it fused or as a member
        of its layer group."""
        return (op_type == self.op_type or any(f[1] == op_type for f in self.fused)
                or any(m[1] == op_type for m in self.members))

    def describe(self) -> str:
        fused = (", computes " + ", ".join(f"`{n}` ({op})" for n, op in self.fused)) if self.fused else ""
        if self.members:
            names = [m[0] for m in self.members]
            shown = ", ".join(f"`{n}`" for n in (names if len(names) <= 4 else names[:2] + ["..."] + names[-1:]))
            return f"`{self.onnx_name}` (layer group of {len(names)} nodes: {shown}; {self.where})".replace("`...`",
                                                                                                           "...")
        return f"`{self.onnx_name}` ({self.op_type}, {self.where}{fused})"


class ModelTarget(Target):
    """A ``.tcx`` executable (a path or a loaded :class:`tilecore.runtime.Executable`)."""

    kind = "model"

    def __init__(self, exe: Executable, bucket: int | None = None) -> None:
        """``bucket``: of an executable with buckets, the one to debug (default 0, or the one
        the inputs' shapes take: :meth:`for_inputs`)."""
        from .. import runtime

        if isinstance(exe, (str, os.PathLike)):
            path = os.fspath(exe)
            if not os.path.exists(path):
                raise TargetError(f"{path}: no such file")
            try:
                exe = runtime.load_executable(path)
            except (ValueError, OSError) as e:  # (the loader's message may name the file already)
                raise TargetError(str(e) if str(e).startswith(f"{path}: ") else f"{path}: {e}") from None
            self.name = os.path.basename(path)
        else:
            path, self.name = None, "model"
        self.path = path  # the .tcx file, None for an Executable given loaded
        # An executable with buckets: the target is one bucket's program (docs/executable.md).
        # (a stand-in with describe() and modules alone, as tests make, is one bucket)
        count = len(exe.buckets) if hasattr(exe, "buckets") else 1
        self.full, self.bucket_count, self.bucket, self.bucket_given = exe, count, None, bucket is not None
        if self.bucket_count > 1:
            self.bucket = 0 if bucket is None else int(bucket)
            if not 0 <= self.bucket < self.bucket_count:
                raise TargetError(f"{path or 'the executable'}: bucket {bucket} of {self.bucket_count} "
                                  f"(0 to {self.bucket_count - 1})")
            exe = exe.bucket(self.bucket)
            self.name += f" [bucket {self.bucket}]"
        elif bucket not in (None, 0):
            raise TargetError(f"{path or 'the executable'}: bucket {bucket}, and the executable has no buckets")
        self.exe = exe
        d = exe.describe()
        self.desc = d
        self.modules = exe.modules
        self.buffers = d["buffers"]
        self.arena_size = int(d["arena_size"])
        self.input_names = [io["name"] for io in d["inputs"]]
        self.output_names = [io["name"] for io in d["outputs"]]
        self.constant_buffers = {c["buffer"] for c in d["constants"]}
        self.values = {}
        self.codes = {}  # value -> (scale, zero point): stored in int8, in floating point in the model
        for io in d["inputs"]:
            self._add_value(io["name"], io["buffer"])
        for c in d["constants"]:
            self._add_value(self.buffers[c["buffer"]]["name"], c["buffer"])
        self.nodes = []
        self.cores = 1
        self.grouped = {}  # node name -> the step of the layer group that runs it
        # an L2 intermediate's value name -> (node index, member index, place)
        self.member_outputs: dict[str, tuple[int, int, dict[str, Any]]] = {}
        try:
            debug = read_debug_info(d, self.modules)
        except TargetError as e:
            raise TargetError(f"{path}: {e}" if path else str(e)) from None
        for index, (step, sd) in enumerate(zip(d["steps"], debug)):
            self._add_step(index, step, sd)
        for io in d["outputs"]:
            if io["name"] not in self.values:
                self._add_value(io["name"], io["buffer"])
        self.current = 0  # the node the debugger is at (set by the debugger)

    def for_inputs(self, inputs: Mapping[str, Any]) -> ModelTarget:
        """The target of the bucket whose input shapes ``inputs`` have, when no bucket was
        asked for; this target otherwise."""
        if self.bucket_count < 2 or self.bucket_given or not inputs:
            return self
        got = {k: list(np.shape(v)) for k, v in inputs.items()}
        for i, b in enumerate(self.full.buckets):
            if all(got.get(k) == list(v) for k, v in b["inputs"].items()):
                if i == self.bucket:
                    return self
                other = ModelTarget(self.full, i)
                other.path, other.name = self.path, self.name.rsplit(" [bucket", 1)[0] + f" [bucket {i}]"
                return other
        return self

    # ---- building the node list -------------------------------------------------------------
    def _add_value(self, name, buffer, shape=None, producer=None) -> None:
        b = self.buffers[buffer]
        dtype = "uint16" if b["dtype"] == "bfloat16" else b["dtype"]
        self.values[name] = Value(name, buffer, b["shape"] if shape is None else shape, dtype, producer)

    def _add_step(self, index, step, sd) -> None:
        for member in sd.group_nodes:
            self.grouped[member] = step["node"]
        for view in sd.views:
            n = Node(len(self.nodes), "view", view.name or f"{view.op}_{len(self.nodes)}", view.name or view.output,
                     view.op, [view.source], [view.output])
            self.nodes.append(n)
            if view.source in self.values:
                v = self.values[view.source]
                self.values[view.output] = Value(view.output, v.buffer, view.shape, v.dtype, n.index)
        args = step["args"]
        outs = sd.outputs
        n_in = len(args) - len(outs)
        if sd.inputs is not None:
            ins = sd.inputs
        else:  # older executables: the buffers' names (the values they were planned for)
            ins = [self.buffers[a]["name"] for a in args[:n_in]]
        n = Node(len(self.nodes), step["kind"], step["node"], step.get("source_node") or step["node"],
                 step["op_type"], ins, outs, step)
        n.step_index = index
        # nodes fused into this step's epilogue (an Add, a Relu): it computes them
        n.fused = list(sd.fused)
        self.codes.update(sd.quantised)
        n.members = sd.group_members()
        if sd.members and all("pc" in r and "out" in r for r in sd.members):
            n.group = [Member(k, r) for k, r in enumerate(sd.members)]
            for g in n.group:
                for place in g.places:
                    if place["space"] == "l2":
                        self.member_outputs[place["value"]] = (n.index, g.index, place)
        self.nodes.append(n)
        for i, o in enumerate(outs):
            self._add_value(o, args[n_in + i], producer=n.index)
        if step["kind"] == "npu":
            n.module = self.modules[step["module"]]
            for f in n.module.info["functions"]:
                if f["name"] == step["function"]:
                    self.cores = max(self.cores, int(f["cores"]))
        else:
            n.module = self.modules[step["module"]]

    # ---- queries -------------------------------------------------------------------------------
    def node(self, index: int | None = None) -> Node | None:
        index = self.current if index is None else index
        return self.nodes[index] if 0 <= index < len(self.nodes) else None

    def find_nodes(self, name: str) -> list[Node]:
        """Nodes whose ONNX name or step name is ``name``, or that compute node ``name``
        fused into their epilogue."""
        return [n for n in self.nodes if n.computes(name)]

    def op_types(self) -> list[str]:
        """The op types of the steps, of the nodes fused into them and of layer groups' members."""
        return sorted({n.op_type for n in self.nodes} | {f[1] for n in self.nodes for f in n.fused if f[1]}
                      | {g[1] for n in self.nodes for g in n.members if g[1]})

    def node_names(self) -> list[str]:
        return sorted({n.onnx_name for n in self.nodes} | {n.name for n in self.nodes}
                      | {f[0] for n in self.nodes for f in n.fused} | {g[0] for n in self.nodes for g in n.members})

    def in_group(self, name: str) -> str:
        """"" or, when node ``name`` runs inside a layer group's step, the message saying so."""
        if name not in self.grouped or name == self.grouped[name]:
            return ""
        step = next((n for n in self.nodes if n.name == self.grouped[name]), None)
        if step is not None and step.member(name) is not None:
            return (f"member {step.member(name).index + 1} of the layer group step `{step.name}`: stops when the "
                    "member starts")
        return (f"runs inside the layer group step `{self.grouped[name]}`: stops before the group (compile with "
                "--no-group, or group=False, to stop at the node itself)")

    def kernel(self, node: Node) -> KernelModuleTarget:
        if node.kernel is None and node.where == "npu":
            node.kernel = KernelModuleTarget(node.module, node.step["function"])
        return node.kernel

    def value_address(self, value: Value) -> int:
        return ARENA_BASE + int(self.buffers[value.buffer]["offset"])

    def clobbered_by(self, value: Value) -> Node | None:
        """The first node after the value's producer that writes bytes of its buffer (or None)."""
        lo = self.value_address(value)
        hi = lo + value.nbytes
        start = -1 if value.producer is None else value.producer
        for n in self.nodes[start + 1:]:
            if n.where == "view":
                continue
            for o in n.outputs:
                w = self.values.get(o)
                if w is None or w.name == value.name:
                    continue
                a = self.value_address(w)
                if a < hi and lo < a + w.nbytes and w.buffer != value.buffer:
                    return n
        return None

    # ---- Target interface (delegated to the current npu node's kernel) ---------------------
    @property
    def program(self) -> Program | None:
        n = self.node()
        return self.kernel(n).program if n is not None and n.where == "npu" else None

    def location(self, core: int, pc: int) -> str | None:
        n = self.node()
        return self.kernel(n).location(core, pc) if n is not None and n.where == "npu" else None

    def listing(self) -> list[str]:
        n = self.node()
        return self.kernel(n).listing() if n is not None and n.where == "npu" else []

    def listing_line(self, core: int, pc: int) -> int:
        n = self.node()
        return self.kernel(n).listing_line(core, pc) if n is not None and n.where == "npu" else 0

    def pcs_at_listing_line(self, line: int) -> dict[int, list[int]]:
        n = self.node()
        return self.kernel(n).pcs_at_listing_line(line) if n is not None and n.where == "npu" else {}

    def pcs_at_location(self, file: str, line: int) -> dict[int, list[int]]:
        n = self.node()
        return self.kernel(n).pcs_at_location(file, line) if n is not None and n.where == "npu" else {}

    def files(self) -> list[str]:
        return []

    # ---- running --------------------------------------------------------------------------------
    def prepare(self, sim: Simulator, inputs: Mapping[str, Any] | None) -> dict[str, Symbol]:
        """Writes the constants and the inputs into the arena; returns {value name: Symbol}
        (every graph value, in the buffer and row-major layout the compiler chose)."""
        from ..ffi._base import _ffi_core

        inputs = dict(inputs or {})
        missing = [n for n in self.input_names if n not in inputs]
        unknown = sorted(set(inputs) - set(self.input_names))
        expects = ", ".join(f"{n}: {self.values[n].dtype}{list(self.values[n].shape)}" for n in self.input_names)
        if missing or unknown:
            what = f"missing input(s) {', '.join(missing)}" if missing else f"unknown input(s) {', '.join(unknown)}"
            raise TargetError(f"{what}; the executable expects {expects}")
        if sim.config["ddr_bytes"] < ARENA_BASE + self.arena_size:
            raise TargetError(f"the arena needs {self.arena_size} bytes of DDR from {ARENA_BASE:#x}; "
                              f"the simulator has {sim.config['ddr_bytes']} (give a larger --ddr_size)")
        sim.write("ddr", ARENA_BASE, np.zeros(self.arena_size, np.uint8))
        _ffi_core._get_global_func("runtime.ExecutableWriteConstants")(self.exe, sim.handle, ARENA_BASE)
        for name in self.input_names:
            v = self.values[name]
            a = np.ascontiguousarray(inputs[name])
            if a.dtype != v.dtype or tuple(a.shape) != v.shape:
                raise TargetError(f"input `{name}` is {a.dtype}{list(a.shape)}; the executable expects {expects}")
            sim.write("ddr", self.value_address(v), a)
        return {name: Symbol(name, "ddr", self.value_address(v), v.dtype, v.shape) for name, v in self.values.items()}

    def load_node(self, sim: Simulator, node: Node) -> None:
        """Loads an npu node's kernel with its argument block, stopped before its first
        instruction, as Executable.run's call of the step does and with its checks: the
        kernel-argument checks (dtypes, sizes against the kernel's buffers) and DDR limited to
        the step's arrays (C++ runtime.ExecutableLoadNpuStep). A step that Executable.run
        refuses is refused here with the same message."""
        from ..ffi._base import _ffi_core

        _ffi_core._get_global_func("runtime.ExecutableLoadNpuStep")(self.exe, node.step_index, sim.handle,
                                                                    ARENA_BASE)

    def run_host_node(self, sim: Simulator, node: Node) -> None:
        """Runs a host node: its buffers from the simulated DDR, the call, its outputs back."""
        from ..ffi import nd

        arrays = []
        for a in node.step["args"]:
            b = self.buffers[a]
            dtype = "uint16" if b["dtype"] == "bfloat16" else b["dtype"]
            arrays.append(nd.array(sim.read("ddr", ARENA_BASE + int(b["offset"]), tuple(b["shape"]), dtype)))
        f = node.module.get_function(node.step["function"])
        f(*arrays)
        n_out = len(node.outputs) or len(arrays)
        for a, arr in zip(node.step["args"][len(arrays) - n_out:], arrays[len(arrays) - n_out:]):
            sim.write("ddr", ARENA_BASE + int(self.buffers[a]["offset"]), arr.numpy())

    def read_value(self, sim: Simulator, name: str, node_index: int | None = None) -> np.ndarray:
        """The value's array as the simulated DDR holds it now (a layer group's L2
        intermediate: as its place in L2 holds it now)."""
        if name not in self.values and name in self.member_outputs:
            place = self.member_outputs[name][2]
            dtype = "uint16" if place["dtype"] == "bfloat16" else place["dtype"]
            return sim.read("l2", place["offset"], tuple(place["shape"]), dtype)
        v = self.values[name]
        return sim.read("ddr", self.value_address(v), v.shape, v.dtype)

    def value_dtype(self, name: str) -> str:
        """The dtype the compiler gave a value (bfloat16 is read as its uint16 bits)."""
        if name not in self.values and name in self.member_outputs:
            return self.member_outputs[name][2]["dtype"]
        return self.buffers[self.values[name].buffer]["dtype"]

    def read_as_model(self, sim: Simulator, name: str) -> np.ndarray:
        """The value as the model has it: :meth:`read_value`, with bfloat16 (held as its
        uint16 bits) as float32 and an int8 edge's codes as the float32 they stand for."""
        a = np.array(self.read_value(sim, name))
        if self.value_dtype(name) == "bfloat16":
            a = (a.astype(np.uint32) << 16).view(np.float32)
        if name in self.codes:  # an int8 edge
            from ..compiler.int8_edges import dequantise

            a = dequantise(a, self.codes[name])
        return a

    def has_value(self, name: str) -> bool:
        """Whether tdb can read value ``name``: a DDR value or a group's L2 intermediate."""
        return name in self.values or name in self.member_outputs

    def disassemble(self) -> str:
        """The executable's code as annotated assembly: each node in order with its ONNX name,
        op type, where it runs and its values, then its kernel's TC1 assembly (once per kernel)."""
        out = [f"# {self.name}: {len(self.nodes)} nodes, arena {self.arena_size} bytes at ddr:{ARENA_BASE:#x}"]
        shown = {}
        for n in self.nodes:
            ins = ", ".join(f"{i}@ddr:{self.value_address(self.values[i]):#x}" if i in self.values else i or "-"
                            for i in n.inputs)
            outs = ", ".join(f"{o}@ddr:{self.value_address(self.values[o]):#x}" if o in self.values else o
                             for o in n.outputs)
            out.append("")
            out.append(f"# ==== node {n.index + 1} of {len(self.nodes)}: `{n.onnx_name}` ({n.op_type}) on the {n.where}")
            out.append(f"#      reads {ins or '-'}; writes {outs or '-'}")
            if n.where == "view":
                out.append("#      a view: no code, the output names the input's bytes")
                continue
            if n.where == "host":
                out.append(f"#      host call `{n.step['function']}` (c module)")
                continue
            key = (n.step["module"], n.step["function"])
            if key in shown:
                out.append(f"#      kernel `{n.step['function']}`: the same as node {shown[key] + 1}'s")
                continue
            shown[key] = n.index
            k = self.kernel(n)
            out.append(f"#      kernel `{n.step['function']}` on {k.cores} core(s); argument block at "
                       f"l1:<L1 size - {ARG_BLOCK_FROM_END}>: " +
                       ", ".join(f"{p['name']} = {self.buffers[a]['name']}" for p, a in zip(k.params, n.step["args"])))
            out.extend(k.program.disassemble().splitlines())
        return "\n".join(out) + "\n"
