"""Per-lane functions for the bodies of traced graphs (the exp dialect).

Inside a body passed to `Graph.map`, `gather`, `scatter`, `reduce` or
`matmul`, the arguments are `hesper.Lane` values; arithmetic on them and
these functions emit exp ops:

    g.map(lambda x, y: x * 2 + hesper.exp.silu(y), [x, y])

Numbers beside a lane become constants of its type. `select` chooses per
lane (Python's `if`, `and`, `or` cannot trace); `f32`, `f16` and `i32`
convert.
"""

from . import _hesper

_fns = _hesper.exp

exp = _fns.exp
log = _fns.log
sqrt = _fns.sqrt
rsqrt = _fns.rsqrt
tanh = _fns.tanh
sin = _fns.sin
cos = _fns.cos
floor = _fns.floor
round = _fns.round
sigmoid = _fns.sigmoid
silu = _fns.silu
gelu = _fns.gelu
abs = _fns.abs
min = _fns.min
max = _fns.max
pow = _fns.pow
fma = _fns.fma
clamp = _fns.clamp
select = _fns.select
f32 = _fns.f32
f16 = _fns.f16
i32 = _fns.i32

__all__ = ["exp", "log", "sqrt", "rsqrt", "tanh", "sin", "cos", "floor",
           "round", "sigmoid", "silu", "gelu", "abs", "min", "max", "pow",
           "fma", "clamp", "select", "f32", "f16", "i32"]
