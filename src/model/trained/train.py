#!/usr/bin/env python3
"""Train sixi-small (the trained default model) and its draft on the GPU machine.

Needs PyTorch and, preferably, transformers with the Qwen3.5 text classes
(Qwen3_5TextConfig / Qwen3_5ForCausalLM, transformers >= 5.17). When they are
missing the script uses Plain35 below, a plain PyTorch module with the same
parameter names and the same forward pass (the definition is sixi's CPU forward
pass, src/model/model.c; Plain35 is its recurrent form), so the saved directory
imports into sixi either way. The first lines of the log say which was used.

    python3 train.py --data DIR --out OUT [--seed 20] [--steps 2400] [--max-seconds 270]

DIR is what make_data.py wrote (tokens.u16 or tokens.u16.gz, meta.json) plus
prompts.json: [{"name", "ids", "fixture": bool}], the token ids of the fixture's
prompts (logits and 48 greedy tokens recorded) and of probes (120 greedy tokens only). Both models train at once, as
two processes on one GPU. OUT gets, for each model M in big, draft:
M/config.json and M/model.safetensors (bfloat16, as save_pretrained writes them), and
reference.json + logits.f32: float32 logits of the big model for every position of
each prompt, and 48 greedy tokens after each, computed on the CPU in float32 from
the saved bfloat16 weights.

Deterministic from --seed: batches, initialisation and dropout-free training come
from seeded generators and torch.use_deterministic_algorithms is on. The step count
is fixed (--steps); --max-seconds is a safety stop, and the log and reference.json
say at which step training stopped, so a rerun with --steps N --stop-at K repeats it.
"""
import argparse
import gzip
import json
import math
import os
import struct
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

VOCAB = 512
EOT, IM_START, IM_END = 509, 510, 511

# Sizes. big: 6 layers (linear, linear, full) x 2, hidden 192; draft: 3 layers, hidden 128.
CONFIGS = {
    "big": dict(hidden_size=192, intermediate_size=448, num_hidden_layers=6, num_attention_heads=4,
                num_key_value_heads=2, head_dim=32, linear_key_head_dim=32, linear_value_head_dim=32,
                linear_num_key_heads=2, linear_num_value_heads=4),
    "draft": dict(hidden_size=128, intermediate_size=320, num_hidden_layers=3, num_attention_heads=2,
                  num_key_value_heads=1, head_dim=32, linear_key_head_dim=32, linear_value_head_dim=32,
                  linear_num_key_heads=2, linear_num_value_heads=2),
}


def hf_config_dict(c):
    n = c["num_hidden_layers"]
    d = dict(architectures=["Qwen3_5ForCausalLM"], model_type="qwen3_5_text", vocab_size=VOCAB,
             hidden_act="silu", linear_conv_kernel_dim=4, rms_norm_eps=1e-6, tie_word_embeddings=False,
             max_position_embeddings=8192, attention_bias=False, attention_dropout=0.0,
             layer_types=(["linear_attention", "linear_attention", "full_attention"] * n)[:n],
             rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25,
                              "mrope_section": [2, 1, 1], "mrope_interleaved": True},
             partial_rotary_factor=0.25, bos_token_id=EOT, eos_token_id=IM_END, pad_token_id=None)
    d.update(c)
    return d


# ---- Plain35: the fallback, a plain PyTorch Qwen3.5 text model with the HF parameter names ----
class RMS(torch.nn.Module):  # x * (1 + w), w starts at 0 (Qwen3.5's norm)
    def __init__(self, n, eps):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(n))
        self.eps = eps

    def forward(self, x):
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps) * (1.0 + self.weight.float())).type_as(x)


class GatedRMS(torch.nn.Module):  # the GDN output norm: norm(x) * w * silu(z), w starts at 1
    def __init__(self, n, eps):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x, z):
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x * F.silu(z)


class GDN(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        E, d, Hk, Hv = c["hidden_size"], c["linear_key_head_dim"], c["linear_num_key_heads"], c["linear_num_value_heads"]
        self.d, self.Hk, self.Hv = d, Hk, Hv
        self.conv_dim = 2 * Hk * d + Hv * d
        self.in_proj_qkv = torch.nn.Linear(E, self.conv_dim, bias=False)
        self.in_proj_z = torch.nn.Linear(E, Hv * d, bias=False)
        self.in_proj_b = torch.nn.Linear(E, Hv, bias=False)
        self.in_proj_a = torch.nn.Linear(E, Hv, bias=False)
        self.conv1d = torch.nn.Conv1d(self.conv_dim, self.conv_dim, 4, groups=self.conv_dim, padding=3, bias=False)
        self.dt_bias = torch.nn.Parameter(torch.ones(Hv))
        self.A_log = torch.nn.Parameter(torch.log(torch.empty(Hv).uniform_(1, 16)))
        self.norm = GatedRMS(d, c["rms_norm_eps"])
        self.out_proj = torch.nn.Linear(Hv * d, E, bias=False)

    def forward(self, x):
        B, T, _ = x.shape
        d, Hk, Hv = self.d, self.Hk, self.Hv
        qkv = F.silu(self.conv1d(self.in_proj_qkv(x).transpose(1, 2))[..., :T]).transpose(1, 2)
        q, k, v = torch.split(qkv, [Hk * d, Hk * d, Hv * d], dim=-1)
        q = F.normalize(q.reshape(B, T, Hk, d), dim=-1, eps=1e-6) / math.sqrt(d)
        k = F.normalize(k.reshape(B, T, Hk, d), dim=-1, eps=1e-6)
        v = v.reshape(B, T, Hv, d)
        rep = Hv // Hk
        q, k = q.repeat_interleave(rep, dim=2), k.repeat_interleave(rep, dim=2)
        beta = torch.sigmoid(self.in_proj_b(x))
        g = -self.A_log.float().exp() * F.softplus(self.in_proj_a(x).float() + self.dt_bias)
        S = x.new_zeros(B, Hv, d, d)
        outs = []
        for t in range(T):
            S = S * g[:, t].exp()[..., None, None]
            kt, vt = k[:, t], v[:, t]
            delta = (vt - torch.einsum("bhkv,bhk->bhv", S, kt)) * beta[:, t, :, None]
            S = S + kt[..., :, None] * delta[..., None, :]
            outs.append(torch.einsum("bhkv,bhk->bhv", S, q[:, t]))
        o = torch.stack(outs, 1)
        z = self.in_proj_z(x).reshape(B, T, Hv, d)
        return self.out_proj(self.norm(o, z).reshape(B, T, Hv * d))


def rope(x, pos, rot, theta):  # neox-style rotation of the first `rot` dims
    half = rot // 2
    inv = 1.0 / theta ** (torch.arange(0, half, device=x.device).float() / half)
    ang = pos[:, None].float() * inv[None]
    cos, sin = ang.cos()[None, :, None], ang.sin()[None, :, None]
    a, b, rest = x[..., :half], x[..., half:rot], x[..., rot:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin, rest], -1)


class Attn(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        E, H, Hkv, hd = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        self.H, self.Hkv, self.hd = H, Hkv, hd
        self.q_proj = torch.nn.Linear(E, H * hd * 2, bias=False)
        self.k_proj = torch.nn.Linear(E, Hkv * hd, bias=False)
        self.v_proj = torch.nn.Linear(E, Hkv * hd, bias=False)
        self.o_proj = torch.nn.Linear(H * hd, E, bias=False)
        self.q_norm = RMS(hd, c["rms_norm_eps"])
        self.k_norm = RMS(hd, c["rms_norm_eps"])
        self.rot = int(hd * 0.25)

    def forward(self, x):
        B, T, _ = x.shape
        H, Hkv, hd = self.H, self.Hkv, self.hd
        q, gate = torch.chunk(self.q_proj(x).view(B, T, H, hd * 2), 2, dim=-1)
        q = self.q_norm(q)
        k = self.k_norm(self.k_proj(x).view(B, T, Hkv, hd))
        v = self.v_proj(x).view(B, T, Hkv, hd)
        pos = torch.arange(T, device=x.device)
        q, k = rope(q, pos, self.rot, 10000.0), rope(k, pos, self.rot, 10000.0)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        k, v = k.repeat_interleave(H // Hkv, 1), v.repeat_interleave(H // Hkv, 1)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, H, hd)
        return self.o_proj((o * torch.sigmoid(gate)).reshape(B, T, H * hd))


class MLP(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate_proj = torch.nn.Linear(c["hidden_size"], c["intermediate_size"], bias=False)
        self.up_proj = torch.nn.Linear(c["hidden_size"], c["intermediate_size"], bias=False)
        self.down_proj = torch.nn.Linear(c["intermediate_size"], c["hidden_size"], bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(torch.nn.Module):
    def __init__(self, c, kind):
        super().__init__()
        self.input_layernorm = RMS(c["hidden_size"], c["rms_norm_eps"])
        self.post_attention_layernorm = RMS(c["hidden_size"], c["rms_norm_eps"])
        if kind == "linear_attention":
            self.linear_attn = GDN(c)
        else:
            self.self_attn = Attn(c)
        self.mlp = MLP(c)

    def forward(self, x):
        mix = self.linear_attn if hasattr(self, "linear_attn") else self.self_attn
        x = x + mix(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class Plain35(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.model = torch.nn.Module()
        self.model.embed_tokens = torch.nn.Embedding(VOCAB, c["hidden_size"])
        self.model.layers = torch.nn.ModuleList(Layer(c, k) for k in c["layer_types"])
        self.model.norm = RMS(c["hidden_size"], c["rms_norm_eps"])
        self.lm_head = torch.nn.Linear(c["hidden_size"], VOCAB, bias=False)
        for m in self.modules():
            if isinstance(m, (torch.nn.Linear, torch.nn.Embedding)):
                torch.nn.init.normal_(m.weight, std=0.02)

    def forward(self, input_ids, use_cache=False):
        x = self.model.embed_tokens(input_ids)
        for layer in self.model.layers:
            x = layer(x)

        class R:
            pass
        r = R()
        r.logits = self.lm_head(self.model.norm(x))
        return r


def probe():
    """The transformers classes for this architecture, or None (then Plain35 is used)."""
    info = {"torch": torch.__version__}
    try:
        import transformers
        info["transformers"] = transformers.__version__
    except ImportError:
        info["transformers"] = None
        return None, info
    found = {}
    for name in ("Qwen3_5TextConfig", "Qwen3_5ForCausalLM", "Qwen3NextConfig", "Qwen3NextForCausalLM"):
        found[name] = hasattr(transformers, name)
    info["classes"] = found
    if found["Qwen3_5TextConfig"] and found["Qwen3_5ForCausalLM"]:
        return (transformers.Qwen3_5TextConfig, transformers.Qwen3_5ForCausalLM), info
    return None, info


def build(kind, hf, seed):
    torch.manual_seed(seed)
    c = hf_config_dict(CONFIGS[kind])
    if hf:
        cfg_cls, model_cls = hf
        kw = {k: v for k, v in c.items() if k not in ("architectures", "model_type")}
        return model_cls(cfg_cls(**kw)), c
    return Plain35(c), c


def load_examples(data):
    p = os.path.join(data, "tokens.u16")
    raw = gzip.open(p + ".gz").read() if os.path.exists(p + ".gz") else open(p, "rb").read()
    ids = torch.frombuffer(bytearray(raw), dtype=torch.int16).to(torch.int32) & 0xFFFF
    meta = json.load(open(os.path.join(data, "meta.json")))
    return ids, meta


def make_rows(ids, header, T):
    """One example a row, padded with <|endoftext|>; labels only on the assistant's tokens."""
    ids = ids.tolist()
    rows, labels = [], []
    start = 0
    hl = len(header)
    for i, t in enumerate(ids):
        if t != EOT:
            continue
        ex = ids[start:i + 1][:T]
        start = i + 1
        lab = [-100] * len(ex)
        j = 0
        while j < len(ex):
            if ex[j:j + hl] == header:
                j += hl
                while j < len(ex):
                    lab[j] = ex[j]
                    if ex[j] == IM_END:
                        break
                    j += 1
            j += 1
        pad = T - len(ex)
        rows.append(ex + [EOT] * pad)
        labels.append(lab + [-100] * pad)
    return torch.tensor(rows, dtype=torch.long), torch.tensor(labels, dtype=torch.long)


def train(kind, a, hf, info, log):
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    ids, meta = load_examples(a.data)
    X, Y = make_rows(ids, meta["assistant_header"], a.seq)
    log("%s: %d rows of %d, %.1f%% of positions trained" % (kind, X.shape[0], a.seq, 100.0 * (Y >= 0).float().mean()))
    model, cfg = build(kind, hf, a.seed)
    model.to(dev).train()
    n_par = sum(p.numel() for p in model.parameters())
    log("%s: %d parameters, %s" % (kind, n_par, "transformers" if hf else "Plain35"))
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    other = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": other, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.98), eps=1e-8)
    gen = torch.Generator().manual_seed(a.seed + (0 if kind == "big" else 1))
    X, Y = X.to(dev), Y.to(dev)
    t0 = time.time()
    stop = a.stop_at or a.steps
    step = 0
    for step in range(1, stop + 1):
        lr = a.lr * min(1.0, step / 100) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(step, a.steps) / a.steps)))
        for gr in opt.param_groups:
            gr["lr"] = lr
        idx = torch.randint(0, X.shape[0], (a.batch,), generator=gen).to(dev)
        x, y = X[idx], Y[idx]
        logits = model(input_ids=x, use_cache=False).logits
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, VOCAB).float(), y[:, 1:].reshape(-1), ignore_index=-100)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 100 == 0 or step == 1:
            log("%s: step %d loss %.4f lr %.2e %.1fs" % (kind, step, loss.item(), lr, time.time() - t0))
        if time.time() - t0 > a.max_seconds:
            log("%s: time cap %.0fs reached: stopped at step %d of %d" % (kind, a.max_seconds, step, a.steps))
            break
    out = os.path.join(a.out, kind)
    os.makedirs(out, exist_ok=True)
    model = model.cpu().eval()
    with torch.no_grad():  # weights exactly bfloat16 from here on, as saved
        for p in model.parameters():
            p.copy_(p.to(torch.bfloat16).float())
    save(model, cfg, out, hf)
    res = {"kind": kind, "parameters": n_par, "steps_planned": a.steps, "steps_done": step,
           "seconds": round(time.time() - t0, 1), "final_loss": round(loss.item(), 4)}
    json.dump(res, open(os.path.join(a.work, kind + ".json"), "w"))
    return model, res


def save(model, cfg, out, hf):
    from safetensors.torch import save_file
    sd = {k: v.detach().to(torch.bfloat16).contiguous() for k, v in model.state_dict().items()}
    save_file(sd, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    c = dict(cfg)
    c["dtype"] = "bfloat16"
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(c, f, indent=2, sort_keys=True)


@torch.no_grad()
def greedy(model, ids, n):
    out = list(ids)
    dev = next(model.parameters()).device
    for _ in range(n):
        lg = model(input_ids=torch.tensor([out], device=dev), use_cache=False).logits[0, -1]
        t = int(lg.argmax())
        out.append(t)
        if t == IM_END:
            break
    return out[len(ids):]


def reference(model, a, info, runs, log):
    torch.set_num_threads(8)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    prompts = json.load(open(os.path.join(a.data, "prompts.json")))
    meta = dict(info)
    meta.update({"runs": runs, "prompts": [], "vocab": VOCAB})
    meta["probes"] = []
    with open(os.path.join(a.out, "logits.f32"), "wb") as f:
        for p in prompts:
            if p.get("fixture"):
                with torch.no_grad():
                    lg = model(input_ids=torch.tensor([p["ids"]]), use_cache=False).logits[0].float().contiguous()
                f.write(struct.pack("<%df" % lg.numel(), *lg.flatten().tolist()))
            if p.get("fixture"):
                g = greedy(model, p["ids"], 48)
            else:  # probes: a look at the replies, on the GPU (not part of the fixture)
                g = greedy(model.to(dev), p["ids"], 100)
                model.cpu()
            (meta["prompts"] if p.get("fixture") else meta["probes"]).append(
                {"name": p["name"], "ids": p["ids"], "greedy": g})
            log("greedy %s: %s" % (p["name"], g))
    json.dump(meta, open(os.path.join(a.out, "reference.json"), "w"), indent=1)


def check_plain(model_hf, a, log):
    """Plain35 with the trained HF weights: its logits against transformers' (a check of the fallback)."""
    c = hf_config_dict(CONFIGS["big"])
    p = Plain35(c)
    missing = p.load_state_dict(model_hf.state_dict(), strict=False)
    prompts = json.load(open(os.path.join(a.data, "prompts.json")))
    with torch.no_grad():
        x = torch.tensor([prompts[0]["ids"]])
        d = (p(x).logits - model_hf(input_ids=x, use_cache=False).logits).abs().max().item()
    log("Plain35 vs transformers on the trained weights: max |logit diff| %.3e (missing %s, unexpected %s)"
        % (d, missing.missing_keys, missing.unexpected_keys))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20)
    ap.add_argument("--steps", type=int, default=2400)
    ap.add_argument("--stop-at", type=int, default=0)
    ap.add_argument("--max-seconds", type=float, default=270)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--seq", type=int, default=320)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--work", default="train-work", help="logs and run summaries")
    ap.add_argument("--only", choices=["big", "draft"], help="train one model (the workers)")
    ap.add_argument("--plain", action="store_true", help="use Plain35 even when transformers has the classes")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    os.makedirs(a.work, exist_ok=True)
    logf = open(os.path.join(a.work, "log-%s.txt" % (a.only or "main")), "a")

    def log(s):
        print(s, flush=True)
        logf.write(s + "\n")
        logf.flush()

    hf, info = probe()
    if a.plain:
        hf = None
    log("probe: %s" % json.dumps(info))
    if a.only:
        train(a.only, a, hf, info, log)
        return
    import subprocess
    base = [sys.executable, os.path.abspath(__file__)] + [x for x in sys.argv[1:]]
    procs = [subprocess.Popen(base + ["--only", k]) for k in ("big", "draft")]
    rc = [p.wait() for p in procs]
    log("workers exited %s" % rc)
    if any(rc):
        sys.exit(1)
    runs = [json.load(open(os.path.join(a.work, k + ".json"))) for k in ("big", "draft")]
    log("runs: %s" % json.dumps(runs))
    model, _ = build("big", hf, a.seed)
    from safetensors.torch import load_file
    sd = {k: v.float() for k, v in load_file(os.path.join(a.out, "big", "model.safetensors")).items()}
    print(model.load_state_dict(sd, strict=True))
    model.eval()
    reference(model, a, info, runs, log)
    if hf:
        try:
            check_plain(model, a, log)
        except Exception as e:  # a check of the fallback only
            log("Plain35 check failed: %r" % e)


if __name__ == "__main__":
    main()
