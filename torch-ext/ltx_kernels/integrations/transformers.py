"""transformers integration: `optimize(model)` swaps ltx_kernels ops into a loaded model, in place.

Works on the module objects it is given (classes matched by name and by the source of their
`forward`); the transformers package is never imported here. What it replaces:

- RMSNorm (`rms_norm=True`): modules whose class name ends with "RMSNorm", with a 1-D `weight`
  and `variance_epsilon` (or `eps`), whose `forward` is one of the two plain RMSNorm bodies
  transformers 5.x uses (Llama's `weight * normed.to(dtype)`, and OLMo-2's
  `(weight * normed).to(dtype)`), plus torch.nn.RMSNorm. The forward becomes `rms_norm`.
  Gemma-style norms (`x * (1 + weight)`), Gemma-3n's `with_scale` norms and any other variant
  are left untouched and logged: never replaced by something that computes differently.
- Residual + norm (`fuse_residual=True`): decoder layers (class name ends with "DecoderLayer")
  whose `forward` is Llama's (Llama, Mistral, Qwen2, Qwen3, DeepSeek-V3, ... in transformers
  5.x) get a forward that computes `h = residual + attn_out; post_attention_layernorm(h)` with
  one `add_rms_norm`. Same signature, same return value (a tensor) as transformers 5.17.
- Gated MLP (`fuse_mlp=True`): modules whose class name ends with "MLP", whose `forward` is
  `down_proj(act_fn(gate_proj(x)) * up_proj(x))`, with nn.Linear gate/up projections and a SiLU
  (or erf/tanh GELU) `act_fn`: gate_proj and up_proj are replaced by one `gate_up_proj` Linear
  (weights `[gate; up]` concatenated once, here) followed by `silu_and_mul` / `gelu_and_mul`
  and `down_proj`. The state_dict keys of those MLPs change accordingly.

Replaced forwards fall back to the module's own code for inputs the ops do not take (dtypes
other than fp32/fp16/bf16, a weight whose dtype makes the original promote differently).
Everything keeps working after `model.to(device / dtype)` (parameters stay registered on the
modules) and under torch.compile (the ops have fake implementations); while torch.compile traces
them, the fused residual + norm and the SiLU / tanh-GELU gated MLPs are written as the original
composition for Inductor to fuse, as it runs them faster; so are RMSNorms of few rows (decode),
of more than 4096 columns or in fp32, and the exact-GELU gated MLP in fp32. RMSNorms of many
16-bit rows and the 16-bit exact-GELU gated MLP keep our kernel, which is faster than
Inductor's there (`_compile_policy.py`).
"""

import ast
import inspect
import logging
import textwrap
import types
from collections import Counter
from typing import Optional

import torch

from ..activation import gelu_and_mul, silu_and_mul
from ..fused_norm import add_rms_norm
from ..norm import rms_norm as _rms_norm
from ._compile_policy import use_kernel

__all__ = ["optimize"]

logger = logging.getLogger("ltx_kernels")

_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _statements_of(fn) -> Optional[list]:
    """The statements of a function, docstring dropped, each normalised by ast.unparse (so
    comments, line breaks and formatting do not matter); None when the source is not available."""
    try:
        src = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(src)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    node = tree.body[0] if tree.body else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        if isinstance(body[0].value.value, str):
            body = body[1:]
    return [ast.unparse(stmt) for stmt in body]


def _body_of(fn) -> Optional[str]:
    """_statements_of(fn) as one string."""
    statements = _statements_of(fn)
    return None if statements is None else "\n".join(statements)


def _body_of_source(src: str) -> str:
    """Statements given as source text, normalised as _statements_of does."""
    return "\n".join(ast.unparse(stmt) for stmt in ast.parse(textwrap.dedent(src)).body)


# The forward bodies this module knows how to replace (transformers 5.x, "modular" copies).
# The two RMSNorm bodies normalise alike and differ in where the weight multiply sits relative
# to the cast back to the input dtype.
_RMS_NORMALISE = """
input_dtype = hidden_states.dtype
hidden_states = hidden_states.to(torch.float32)
variance = hidden_states.pow(2).mean(-1, keepdim=True)
hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
"""
_RMS_LLAMA = _body_of_source(_RMS_NORMALISE + "return self.weight * hidden_states.to(input_dtype)")
_RMS_OLMO2 = _body_of_source(_RMS_NORMALISE + "return (self.weight * hidden_states).to(input_dtype)")
_MLP_LLAMA = _body_of_source(
    """
    down_proj = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))
    return down_proj
    """
)


# Llama's decoder-layer forward (transformers 5.x), stated once, in the two halves that
# _fused_decoder_forward runs as they are: the body recognised is _llama_decoder_head's
# statements up to its return, then _llama_decoder_tail's. So what is recognised and what the
# replacement runs cannot drift apart.
def _llama_decoder_head(
    self,
    hidden_states,
    attention_mask=None,
    position_ids=None,
    past_key_values=None,
    use_cache=False,
    position_embeddings=None,
    **kwargs,
):
    """Input norm and self-attention: (attention output, residual)."""
    residual = hidden_states
    hidden_states = self.input_layernorm(hidden_states)
    hidden_states, _ = self.self_attn(
        hidden_states=hidden_states,
        attention_mask=attention_mask,
        position_ids=position_ids,
        past_key_values=past_key_values,
        use_cache=use_cache,
        position_embeddings=position_embeddings,
        **kwargs,
    )
    return hidden_states, residual


def _llama_decoder_tail(self, hidden_states, residual):
    """Residual add, post-attention norm, MLP and residual add: the layer's output."""
    hidden_states = residual + hidden_states
    residual = hidden_states
    hidden_states = self.post_attention_layernorm(hidden_states)
    hidden_states = self.mlp(hidden_states)
    hidden_states = residual + hidden_states
    return hidden_states


def _llama_decoder_body() -> Optional[str]:
    head, tail = _statements_of(_llama_decoder_head), _statements_of(_llama_decoder_tail)
    if head is None or tail is None:  # this module's own source is not readable
        return None
    return "\n".join(head[:-1] + tail)


_DECODER_LLAMA = _llama_decoder_body()
_DECODER_PARAMS = tuple(inspect.signature(_llama_decoder_head).parameters)

_body_cache = {}


def _class_forward_body(cls) -> Optional[str]:
    if cls not in _body_cache:
        _body_cache[cls] = _body_of(cls.forward)
    return _body_cache[cls]


# ---------------------------------------------------------------------------------------------
# Replacement forwards. Bound to one module instance with types.MethodType; they read the
# module's attributes at call time, so `model.to(...)` and later weight loads are seen.


def _llama_rms_forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
    weight = self.weight
    if hidden_states.dtype not in _DTYPES or not use_kernel("rms_norm", hidden_states):
        return type(self).forward(self, hidden_states)
    if weight.dtype == hidden_states.dtype:
        return _rms_norm(hidden_states, weight, float(self.variance_epsilon))
    # `weight * normed.to(input_dtype)`: rounded to x's dtype first, then the promoted product.
    return weight * _rms_norm(hidden_states, None, float(self.variance_epsilon))


def _olmo2_rms_forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
    weight = self.weight
    if (hidden_states.dtype not in _DTYPES or weight.dtype != hidden_states.dtype
            or not use_kernel("rms_norm", hidden_states)):
        return type(self).forward(self, hidden_states)
    return _rms_norm(hidden_states, weight, float(self.variance_epsilon))


def _torch_rms_forward(self, x: torch.Tensor) -> torch.Tensor:
    weight = self.weight
    if (x.dtype not in _DTYPES or (weight is not None and weight.dtype != x.dtype)
            or not use_kernel("rms_norm", x)):
        return type(self).forward(self, x)
    eps = self.eps if self.eps is not None else torch.finfo(x.dtype).eps
    return _rms_norm(x, weight, float(eps))


_RMS_FORWARDS = {"llama": _llama_rms_forward, "olmo2": _olmo2_rms_forward, "torch": _torch_rms_forward}


def _norm_eps(norm) -> float:
    eps = getattr(norm, "variance_epsilon", None)
    if eps is None:
        eps = norm.eps
    return float(eps)


def _fused_decoder_forward(
    self,
    hidden_states: torch.Tensor,
    attention_mask=None,
    position_ids=None,
    past_key_values=None,
    use_cache=False,
    position_embeddings=None,
    **kwargs,
) -> torch.Tensor:
    hidden_states, residual = _llama_decoder_head(
        self, hidden_states, attention_mask, position_ids, past_key_values, use_cache, position_embeddings, **kwargs
    )
    norm = self.post_attention_layernorm
    weight = norm.weight
    if not (
        use_kernel("add_rms_norm")
        and hidden_states.dtype in _DTYPES
        and weight.dtype == hidden_states.dtype
        and residual.dtype == hidden_states.dtype
        and residual.shape == hidden_states.shape
    ):
        return _llama_decoder_tail(self, hidden_states, residual)
    # residual_out = residual + attn_out rounded once to the dtype (what `+` stores), and the
    # norm computed from that rounded sum: the original's two steps, in one pass.
    hidden_states, residual = add_rms_norm(hidden_states, residual, weight, _norm_eps(norm))
    hidden_states = self.mlp(hidden_states)
    hidden_states = residual + hidden_states
    return hidden_states


def _mlp_forward(self, x, act):
    gate_up = self.gate_up_proj(x)
    policy_name = {"silu": "silu_and_mul", "tanh": "gelu_and_mul(tanh)"}.get(act, "gelu_and_mul")
    if gate_up.dtype in _DTYPES and use_kernel(policy_name, gate_up):
        if act == "silu":
            h = silu_and_mul(gate_up)
        else:
            h = gelu_and_mul(gate_up, approximate=act)
    else:
        d = gate_up.shape[-1] // 2
        h = self.act_fn(gate_up[..., :d]) * gate_up[..., d:]
    return self.down_proj(h)


def _mlp_forward_silu(self, x: torch.Tensor) -> torch.Tensor:
    return _mlp_forward(self, x, "silu")


def _mlp_forward_gelu(self, x: torch.Tensor) -> torch.Tensor:
    return _mlp_forward(self, x, "none")


def _mlp_forward_gelu_tanh(self, x: torch.Tensor) -> torch.Tensor:
    return _mlp_forward(self, x, "tanh")


_MLP_FORWARDS = {"silu": _mlp_forward_silu, "none": _mlp_forward_gelu, "tanh": _mlp_forward_gelu_tanh}

_OURS = set(_RMS_FORWARDS.values()) | set(_MLP_FORWARDS.values()) | {_fused_decoder_forward}


def _already_optimized(module) -> bool:
    fwd = module.__dict__.get("forward")
    return getattr(fwd, "__func__", None) in _OURS


# ---------------------------------------------------------------------------------------------
# Classification: (kind, None) when supported, (None, reason) when not.


def _rms_kind(module):
    weight = getattr(module, "weight", None)
    if isinstance(module, torch.nn.RMSNorm):
        if type(module).forward is not torch.nn.RMSNorm.forward:
            return None, "subclass of torch.nn.RMSNorm with its own forward"
        if len(module.normalized_shape) != 1:
            return None, "normalises over more than the last dimension"
        return "torch", None
    if not isinstance(weight, torch.Tensor) or weight.dim() != 1:
        return None, "no 1-D weight"
    if getattr(module, "variance_epsilon", None) is None and getattr(module, "eps", None) is None:
        return None, "no variance_epsilon / eps"
    body = _class_forward_body(type(module))
    if body == _RMS_LLAMA:
        return "llama", None
    if body == _RMS_OLMO2:
        return "olmo2", None
    if "Gemma" in type(module).__name__ or (body is not None and "1.0 + self.weight" in body):
        return None, "Gemma-style RMSNorm (x * (1 + weight) or with_scale): not replaced"
    return None, "forward is not a known RMSNorm formula"


def _decoder_kind(module):
    for name in ("input_layernorm", "post_attention_layernorm", "self_attn", "mlp"):
        if not isinstance(getattr(module, name, None), torch.nn.Module):
            return None, f"no {name} submodule"
    fwd = type(module).forward
    if _DECODER_LLAMA is None or _class_forward_body(type(module)) != _DECODER_LLAMA:
        return None, "forward differs from LlamaDecoderLayer's (transformers 5.x)"
    try:
        params = tuple(inspect.signature(fwd).parameters)
    except (TypeError, ValueError):
        return None, "forward signature not readable"
    if params != _DECODER_PARAMS:
        return None, "forward signature differs from LlamaDecoderLayer's"
    norm_kind, reason = _rms_kind(module.post_attention_layernorm)
    if norm_kind not in ("llama", "olmo2"):
        return None, f"post_attention_layernorm {type(module.post_attention_layernorm).__name__}: {reason}"
    return "llama", None


_SILU_NAMES = {"SiLUActivation", "SiLU"}
_GELU_NAMES = {"GELUActivation": "none", "GELUTanh": "tanh", "PytorchGELUTanh": "tanh"}


def _act_kind(act):
    name = type(act).__name__
    if name in _SILU_NAMES:
        return "silu"
    if name == "GELU" and isinstance(act, torch.nn.GELU):
        return act.approximate if act.approximate in ("none", "tanh") else None
    return _GELU_NAMES.get(name)


def _mlp_kind(module):
    gate, up, down = (getattr(module, n, None) for n in ("gate_proj", "up_proj", "down_proj"))
    if gate is None or up is None or down is None or not hasattr(module, "act_fn"):
        return None, "no gate_proj / up_proj / down_proj / act_fn"
    if type(gate) is not torch.nn.Linear or type(up) is not torch.nn.Linear:
        return None, "gate_proj / up_proj are not plain nn.Linear (quantized?)"
    if _class_forward_body(type(module)) != _MLP_LLAMA:
        return None, "forward is not down_proj(act_fn(gate_proj(x)) * up_proj(x))"
    act = _act_kind(module.act_fn)
    if act is None:
        return None, f"activation {type(module.act_fn).__name__} not supported (SiLU, GELU only)"
    gw, uw = gate.weight, up.weight
    if gw.shape != uw.shape or gw.dtype != uw.dtype or gw.device != uw.device or gw.is_meta:
        return None, "gate_proj and up_proj differ in shape, dtype or device (or are on meta)"
    if (gate.bias is None) != (up.bias is None):
        return None, "only one of gate_proj / up_proj has a bias"
    if hasattr(gate, "_hf_hook") or hasattr(up, "_hf_hook"):
        return None, "gate_proj / up_proj carry accelerate hooks (offloading)"
    return act, None


def _fuse_gate_up(module):
    gate, up = module.gate_proj, module.up_proj
    fused = torch.nn.Linear(
        gate.in_features,
        gate.out_features + up.out_features,
        bias=gate.bias is not None,
        device=gate.weight.device,
        dtype=gate.weight.dtype,
    )
    with torch.no_grad():
        fused.weight.copy_(torch.cat([gate.weight, up.weight], dim=0))
        if gate.bias is not None:
            fused.bias.copy_(torch.cat([gate.bias, up.bias], dim=0))
    fused.weight.requires_grad_(gate.weight.requires_grad)
    if fused.bias is not None:
        fused.bias.requires_grad_(gate.bias.requires_grad)
    fused.train(gate.training)
    del module.gate_proj
    del module.up_proj
    module.gate_up_proj = fused


# ---------------------------------------------------------------------------------------------


def optimize(
    model: torch.nn.Module,
    *,
    rms_norm: bool = True,
    fuse_residual: bool = True,
    fuse_mlp: bool = True,
) -> torch.nn.Module:
    """Replace supported submodules' forwards of a transformers model with ltx_kernels ops, in
    place; returns `model`. Logs (logger "ltx_kernels", INFO) one line per kind of replacement
    and one line per module class left untouched, with the reason. Calling it twice is harmless.

    rms_norm: RMSNorm modules -> `rms_norm`. fuse_residual: Llama-style decoder layers ->
    `add_rms_norm` for the attention residual and post-attention norm. fuse_mlp: gated MLPs ->
    one `gate_up_proj` Linear + `silu_and_mul` / `gelu_and_mul` + `down_proj`.

    Inference only: the ops have no autograd.
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"ltx_kernels.optimize: model must be a torch.nn.Module (got {type(model).__name__})")
    done = Counter()  # (what, class name) -> count
    skipped = Counter()  # (what, class name, reason) -> count
    for _, module in list(model.named_modules()):
        cls_name = type(module).__name__
        if _already_optimized(module):
            continue
        if fuse_mlp and cls_name.endswith("MLP"):
            kind, reason = _mlp_kind(module)
            if kind is None:
                skipped[("gated MLP", cls_name, reason)] += 1
            else:
                _fuse_gate_up(module)
                module.forward = types.MethodType(_MLP_FORWARDS[kind], module)
                act = "silu_and_mul" if kind == "silu" else f"gelu_and_mul({kind})"
                done[(f"gated MLP -> gate_up_proj + {act}", cls_name)] += 1
        elif fuse_residual and cls_name.endswith("DecoderLayer"):
            kind, reason = _decoder_kind(module)
            if kind is None:
                skipped[("residual + norm", cls_name, reason)] += 1
            else:
                module.forward = types.MethodType(_fused_decoder_forward, module)
                done[("residual + post_attention_layernorm -> add_rms_norm", cls_name)] += 1
        elif rms_norm and cls_name.endswith("RMSNorm"):
            kind, reason = _rms_kind(module)
            if kind is None:
                skipped[("rms_norm", cls_name, reason)] += 1
            else:
                module.forward = types.MethodType(_RMS_FORWARDS[kind], module)
                done[("RMSNorm -> rms_norm", cls_name)] += 1
    for (what, cls_name), n in done.items():
        logger.info("ltx_kernels.optimize: %s: replaced the forward of %d %s module(s)", what, n, cls_name)
    for (what, cls_name, reason), n in skipped.items():
        logger.info("ltx_kernels.optimize: %s: left %d %s module(s) untouched: %s", what, n, cls_name, reason)
    return model
