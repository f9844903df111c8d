#!/usr/bin/env python3
"""The reference for training/step on a GPU: the same GPT-2 step in PyTorch.

Trains GPT-2 (the same shapes as infrabench's presets: learned positions, pre-LayerNorm blocks,
causal multi-head attention through scaled_dot_product_attention, GELU(tanh) MLP, tied embeddings,
vocabulary 50304) with bf16 autocast and fp32 master weights, fused AdamW (betas 0.9/0.95, weight
decay 0.1 on matrices), in eager mode and optionally under torch.compile, on one GPU, and prints
tokens/s. With --report, it finds the matching training/step result (model, batch, seq, dtype) in
an infrabench JSON report from the same GPU and prints infrabench's rate over PyTorch's.

The batches are random tokens already on the GPU: PyTorch's rate is the model step alone, while
infrabench's step also reads its tokens from storage and copies them to the GPU (overlapped with
compute). The ratio is therefore a lower bound of infrabench's compute efficiency against PyTorch.

    python3 benchmarks/training/pytorch_reference.py --report report.json [--compile]

On the GPU machines, run it with the system's PyTorch and without our libraries in the path:
    env -u LD_LIBRARY_PATH python3 benchmarks/training/pytorch_reference.py ...
Exit status: 0 measured, 1 the comparison failed (no matching result), 2 bad input or no PyTorch /
no GPU here (one line on stderr saying which).
"""
import argparse
import json
import math
import statistics
import sys
import time

PRESETS = {  # name: (layers, width, heads, vocabulary, positions), as kernels/cpu/transformer
    "gpt2-tiny": (2, 64, 4, 512, 64),
    "gpt2-124m": (12, 768, 12, 50304, 1024),
    "gpt2-350m": (24, 1024, 16, 50304, 1024),
}
VIT_PRESETS = {  # name: (layers, width, heads, image, patch, classes); --device cpu only
    "vit-tiny": (2, 64, 4, 32, 8, 10),
}


def fail(code, text):
    print(f"pytorch_reference: {text}", file=sys.stderr)
    sys.exit(code)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=sorted(PRESETS) + sorted(VIT_PRESETS), default="gpt2-124m")
    p.add_argument("--batch", type=int, default=16, help="sequences per step (default 16)")
    p.add_argument("--seq", type=int, default=0, help="tokens per sequence (0 = the model's)")
    p.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                   help="cpu: fp32 only, against infrabench's CPU step (default cuda)")
    p.add_argument("--threads", type=int, default=0,
                   help="--device cpu: PyTorch's intra-op threads (0 = PyTorch's default)")
    p.add_argument("--steps", type=int, default=30, help="timed steps (default 30)")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps first (default 5)")
    p.add_argument("--compile", action="store_true", help="also measure torch.compile's step")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--report", help="an infrabench JSON report holding training/step on this GPU")
    p.add_argument("--json", action="store_true", help="print the results as one JSON object")
    a = p.parse_args(argv)
    if a.batch < 1 or a.steps < 1 or a.warmup < 0 or a.threads < 0:
        fail(2, "--batch and --steps must be positive, --warmup and --threads not negative")
    if a.device == "cpu" and a.dtype != "fp32":
        fail(2, "--device cpu runs fp32 only (infrabench's CPU step is fp32): add --dtype fp32")
    if a.model in VIT_PRESETS:
        _, _, _, image, patch, _ = VIT_PRESETS[a.model]
        tokens = (image // patch) ** 2 + 1
        if a.device != "cpu" or a.seq not in (0, tokens):
            fail(2, f"{a.model} runs with --device cpu and its own sequence ({tokens} tokens)")
        a.seq = tokens
        return a
    positions = PRESETS[a.model][4]
    if a.seq == 0:
        a.seq = positions
    if not 1 <= a.seq <= positions:
        fail(2, f"--seq {a.seq} is outside 1..{positions} for {a.model}")
    return a


def infrabench_rate(path, a):
    """tokens/s per GPU of the matching training/step result, and a description of it."""
    try:
        with open(path) as f:
            report = json.load(f)
    except OSError as e:
        fail(2, f"cannot read {path}: {e.strerror}")
    except json.JSONDecodeError as e:
        fail(2, f"{path} is not JSON: {e}")
    found = []
    for r in report.get("results", []):
        if r.get("benchmark") != "training/step" or r.get("status") != "passed":
            continue
        axes, shown = r.get("axes", {}), r.get("axes_display", {})
        if axes.get("model") != a.model:
            continue
        # auto values are matched by what they resolved to ("auto (16)").
        def value(name):
            text = str(shown.get(name, axes.get(name)))
            return text[len("auto ("):-1] if text.startswith("auto (") else text
        if value("batch") == str(a.batch) and value("seq") == str(a.seq) and \
                value("dtype") == a.dtype and \
                value("device") == ("gpu" if a.device == "cuda" else "cpu"):
            metrics = {m["name"]: m["value"] for m in r.get("metrics", [])}
            if "tokens_per_s_per_rank" in metrics:
                found.append((metrics["tokens_per_s_per_rank"], r))
    if not found:
        fail(1, f"{path} has no passed training/step result for model={a.model} batch={a.batch} "
                f"seq={a.seq} dtype={a.dtype} device={a.device}")
    rate, r = found[-1]
    return rate, f"infrabench {r.get('host', '?')} rank {r.get('rank', 0)}"


def build(a, torch):
    nn, F = torch.nn, torch.nn.functional
    if a.model in VIT_PRESETS:
        return build_vit(a, torch)
    L, C, H, V, positions = PRESETS[a.model]

    Block = block_class(torch, C, H, causal=True)

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(positions, C)
            self.blocks = nn.ModuleList(Block() for _ in range(L))
            self.lnf = nn.LayerNorm(C)
            for name, p in self.named_parameters():  # infrabench's initialisation
                if p.dim() == 2:
                    std = 0.02 / math.sqrt(2 * L) if name.endswith("proj.weight") else 0.02
                    nn.init.normal_(p, 0.0, std)
                elif name.endswith("bias"):
                    nn.init.zeros_(p)

        def forward(self, idx, targets):
            T = idx.shape[1]
            x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
            for b in self.blocks:
                x = b(x)
            logits = self.lnf(x) @ self.wte.weight.t()  # tied head
            return F.cross_entropy(logits.view(-1, V).float(), targets.view(-1))

    return optimise(a, torch, GPT().to(a.device))


def block_class(torch, C, H, causal):
    """The pre-LayerNorm transformer block of both families."""
    nn, F = torch.nn, torch.nn.functional

    def attention(q, k, v):
        if hasattr(F, "scaled_dot_product_attention"):  # PyTorch 2.0 and later
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        # PyTorch 1.13 (Debian's): the materialised form, as minGPT's.
        s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
        if causal:
            T = q.shape[-2]
            mask = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
            s = s.masked_fill(mask, float("-inf"))
        return torch.softmax(s, dim=-1) @ v

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
            self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
            self.fc, self.fcproj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

        def forward(self, x):
            B, T, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
            y = attention(q, k, v)
            x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
            return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    return Block


def build_vit(a, torch):
    """ViT as infrabench's: patches through a linear layer (the im2col GEMM), a class token,
    learned positions, non-causal blocks, the final LayerNorm on the class token, a linear head."""
    nn, F = torch.nn, torch.nn.functional
    L, C, H, image, patch, classes = VIT_PRESETS[a.model]
    Block = block_class(torch, C, H, causal=False)
    P = (image // patch) ** 2

    class ViT(nn.Module):
        def __init__(self):
            super().__init__()
            self.patch = nn.Linear(3 * patch * patch, C)
            self.cls = nn.Parameter(torch.zeros(1, 1, C))
            self.pos = nn.Parameter(torch.randn(1, P + 1, C) * 0.02)
            self.blocks = nn.ModuleList(Block() for _ in range(L))
            self.lnf, self.head = nn.LayerNorm(C), nn.Linear(C, classes)

        def forward(self, images, labels):
            B = images.shape[0]
            p = images.unfold(2, patch, patch).unfold(3, patch, patch)  # B 3 py px k k
            p = p.permute(0, 2, 3, 1, 4, 5).reshape(B, P, 3 * patch * patch)
            x = torch.cat([self.cls.expand(B, 1, C), self.patch(p)], dim=1) + self.pos
            for b in self.blocks:
                x = b(x)
            return F.cross_entropy(self.head(self.lnf(x[:, 0])), labels)

    return optimise(a, torch, ViT().to(a.device))


def optimise(a, torch, model):
    """AdamW as infrabench's: weight decay on matrices, betas 0.9/0.95, eps 1e-8."""
    decay = [p for p in model.parameters() if p.dim() == 2]
    rest = [p for p in model.parameters() if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": rest, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8,
                            **({"fused": True} if a.device == "cuda" else {}))
    return model, opt, sum(p.numel() for p in model.parameters())


def measure(a, torch, model, opt, step_fn):
    gen = torch.Generator(device=a.device).manual_seed(1)
    if a.model in VIT_PRESETS:
        _, _, _, image, _, classes = VIT_PRESETS[a.model]
        x = torch.randn(a.batch, 3, image, image, device=a.device, generator=gen)
        y = torch.randint(0, classes, (a.batch,), device=a.device, generator=gen)
    else:
        data = torch.randint(0, PRESETS[a.model][3], (a.batch, a.seq + 1), device=a.device,
                             generator=gen)
        x, y = data[:, :-1].contiguous(), data[:, 1:].contiguous()
    sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)
    times, losses = [], []
    for i in range(a.warmup + a.steps):
        sync()
        t0 = time.perf_counter()
        loss = step_fn(x, y)
        losses.append(loss.item())  # a sync, as infrabench's step ends with one
        t = time.perf_counter() - t0
        if i >= a.warmup:
            times.append(t)
    median = statistics.median(times)
    return {"tokens_per_s": a.batch * a.seq / median, "step_ms": median * 1e3,
            "loss_first": losses[0], "loss_last": losses[-1]}


def main(argv):
    a = parse_args(argv)
    ours = infrabench_rate(a.report, a) if a.report else None
    try:
        import torch
    except ImportError:
        fail(2, "PyTorch is not installed here (import torch failed): run this on the GPU machine, "
                "whose python3 has it")
    if a.device == "cpu":
        if a.threads:
            torch.set_num_threads(a.threads)
    elif not torch.cuda.is_available():
        fail(2, "PyTorch sees no CUDA device here")
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 means fp32, as infrabench's
    model, opt, params = build(a, torch)
    autocast = torch.autocast(a.device, dtype=torch.bfloat16, enabled=a.dtype == "bf16")

    def eager_step(x, y):
        opt.zero_grad(set_to_none=True)
        with autocast:
            loss = model(x, y)
        loss.backward()
        opt.step()
        return loss

    where = torch.cuda.get_device_name() if a.device == "cuda" else \
        f"CPU, {torch.get_num_threads()} thread(s)"
    results = {"gpu": where, "torch": torch.__version__, "model": a.model,
               "parameters": params, "batch": a.batch, "seq": a.seq, "dtype": a.dtype,
               "eager": measure(a, torch, model, opt, eager_step)}
    if a.compile:
        compiled = torch.compile(model)

        def compiled_step(x, y):
            opt.zero_grad(set_to_none=True)
            with autocast:
                loss = compiled(x, y)
            loss.backward()
            opt.step()
            return loss

        results["compile"] = measure(a, torch, model, opt, compiled_step)
    if ours:
        results["infrabench"] = {"tokens_per_s_per_gpu": ours[0], "source": ours[1]}
        for mode in ("eager", "compile"):
            if mode in results:
                results[f"ratio_vs_{mode}"] = ours[0] / results[mode]["tokens_per_s"]
    if a.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"{results['gpu']}, PyTorch {results['torch']}: {a.model} ({params / 1e6:.1f} M "
          f"parameters), batch {a.batch}, seq {a.seq}, {a.dtype}")
    for mode in ("eager", "compile"):
        if mode in results:
            m = results[mode]
            print(f"  PyTorch {mode:8s} {m['tokens_per_s']:12,.0f} tokens/s  "
                  f"({m['step_ms']:.1f} ms/step, loss {m['loss_first']:.3f} -> "
                  f"{m['loss_last']:.3f})")
    if ours:
        print(f"  infrabench       {ours[0]:12,.0f} tokens/s per GPU ({ours[1]})")
        for mode in ("eager", "compile"):
            if f"ratio_vs_{mode}" in results:
                print(f"  infrabench / PyTorch {mode}: {results[f'ratio_vs_{mode}']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
