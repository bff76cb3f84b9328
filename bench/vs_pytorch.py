"""The PyTorch side of bench/vs_pytorch.ts: one update or one generation batch with transformers'
Qwen2ForCausalLM (float32, 2 threads) on the workload the starpo side wrote into a folder (config.json,
model.safetensors, workload.json, and after the starpo side's first update, advantages.json). Prints one JSON
line: seconds, tokens, peak RSS and, for the update, the gradient norm before clipping and the seconds of the
clip and AdamW step. With workload.json's gradientCheckpointing, the update recomputes each decoder layer in the
backward (transformers' gradient_checkpointing_enable, non-reentrant). With its lora, PEFT's LoRA adapters of that
rank on every linear layer of the decoder are what the update trains (get_peft_model; AdamW and clipping over the
adapters only), as starpo's lora_target all.

The update is the quickstart's loss as ROLL computes it on fresh rollouts: the importance ratio
exp(logp - logp.detach()) times the trajectory's advantage (REINFORCE, one value on every response token),
negated, aggregated with loss_agg_mode, plus entropy_loss_coef times the entropy; gradients accumulated over
micro-batches; then AdamW. The advantages are the ones starpo's update computed, so both sides take the same
gradient.

    python bench/vs_pytorch.py <folder> update|generation [--profile]
"""
import json
import resource
import sys
import time
from pathlib import Path

import torch
from safetensors.torch import load_file
from transformers import Qwen2Config, Qwen2ForCausalLM

torch.set_num_threads(2)


def load_model(folder):
    config = Qwen2Config.from_dict(json.loads((folder / "config.json").read_text()))
    model = Qwen2ForCausalLM(config).float()
    state = load_file(str(folder / "model.safetensors"))
    missing, unexpected = model.load_state_dict(state, strict=False)
    # A tied lm_head is not in the file; nothing else may be missing.
    assert all(k == "lm_head.weight" for k in missing) and not unexpected, (missing, unexpected)
    model.tie_weights()
    return model


def agg(values, mask, mode, rows_with_tokens, tokens):
    """A micro-batch's share of the minibatch loss (starpo docs/numerics.md section 6; ROLL agg_loss)."""
    if mode == "token-mean":
        return (values * mask).sum() / tokens
    per_row = (values * mask).sum(1)
    if mode == "seq-mean-token-mean":
        return (per_row / mask.sum(1).clamp(min=1)).sum() / rows_with_tokens
    if mode == "seq-mean-token-sum":
        return per_row.sum() / rows_with_tokens
    raise ValueError(f"loss_agg_mode {mode} is not in this bench")


def with_lora(model, lora):
    from peft import LoraConfig, get_peft_model

    targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    config = LoraConfig(r=lora["rank"], lora_alpha=lora["alpha"], target_modules=targets, lora_dropout=0.0, bias="none", task_type="CAUSAL_LM")
    return get_peft_model(model, config)


def update(model, w, advantages):
    if w.get("gradientCheckpointing"):
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.train()
    if w.get("lora"):
        model = with_lora(model, w["lora"])
    params = [p for p in model.parameters() if p.requires_grad]
    kept = [t for t in w["trajectories"] if t["trajId"] in advantages]
    opt = torch.optim.AdamW(params, lr=w["lr"], betas=tuple(w["betas"]), eps=1e-8, weight_decay=w["weightDecay"])
    shifted = [t["responseMask"][1:] for t in kept]
    tokens = max(1, sum(sum(m) for m in shifted))
    rows_with_tokens = max(1, sum(1 for m in shifted if sum(m) > 0))
    # starpo buckets micro-batches by length; so does this side.
    order = sorted(range(len(kept)), key=lambda i: (len(kept[i]["inputIds"]), i))
    micro = w["microBatch"]
    started = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    for start in range(0, len(order), micro):
        rows = [kept[i] for i in order[start : start + micro]]
        L = max(len(t["inputIds"]) for t in rows)
        ids = torch.tensor([t["inputIds"] + [w["padId"]] * (L - len(t["inputIds"])) for t in rows])
        attention = torch.tensor([[1] * len(t["inputIds"]) + [0] * (L - len(t["inputIds"])) for t in rows])
        mask = torch.tensor([t["responseMask"][1:] + [0] * (L - len(t["inputIds"])) for t in rows], dtype=torch.float32)
        adv = torch.tensor([advantages[t["trajId"]] for t in rows], dtype=torch.float32)[:, None]
        logits = model(input_ids=ids, attention_mask=attention).logits[:, :-1]
        logp = torch.log_softmax(logits, dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
        ratio = torch.exp(logp - logp.detach())
        loss = agg(-adv * ratio, mask, w["lossAggMode"], rows_with_tokens, tokens)
        if w["entropyLossCoef"] > 0:
            entropy = torch.logsumexp(logits, -1) - (torch.softmax(logits, -1) * logits).sum(-1)
            loss = loss - w["entropyLossCoef"] * agg(entropy, mask, w["lossAggMode"], rows_with_tokens, tokens)
        loss.backward()
    opt_started = time.perf_counter()
    grad_norm = torch.nn.utils.clip_grad_norm_(params, w["maxGradNorm"]).item()
    opt.step()
    ended = time.perf_counter()
    return {
        "seconds": ended - started,
        "optimizerSeconds": ended - opt_started,
        "tokens": sum(len(t["inputIds"]) for t in w["trajectories"]),
        "gradNorm": grad_norm,
        "trainableParams": sum(p.numel() for p in params),
    }


def generation(model, w):
    if w.get("lora"):
        model = with_lora(model, w["lora"]).eval()
    contexts = w["contexts"]
    L = max(len(c) for c in contexts)
    ids = torch.tensor([[w["padId"]] * (L - len(c)) + c for c in contexts])
    attention = torch.tensor([[0] * (L - len(c)) + [1] * len(c) for c in contexts])
    s = w["sampling"]
    torch.manual_seed(1)
    started = time.perf_counter()
    with torch.no_grad():
        out = model.generate(
            input_ids=ids,
            attention_mask=attention,
            max_new_tokens=w["newTokens"],
            min_new_tokens=w["newTokens"],
            do_sample=s["do_sample"],
            temperature=s["temperature"] if s["do_sample"] else None,
            top_p=s["top_p"] if s["do_sample"] else None,
            top_k=s["top_k"] if s["do_sample"] else None,
            pad_token_id=w["padId"],
            use_cache=True,
        )
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "tokens": int((out.shape[1] - L) * out.shape[0])}


def main():
    folder, job = Path(sys.argv[1]), sys.argv[2]
    profile = "--profile" in sys.argv
    w = json.loads((folder / "workload.json").read_text())
    model = load_model(folder)
    run = (lambda: update(model, w, json.loads((folder / "advantages.json").read_text()))) if job == "update" else (lambda: generation(model, w))
    if profile:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            result = run()
        ops = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
        result["ops"] = [{"name": e.key, "calls": e.count, "ms": e.self_cpu_time_total / 1000} for e in ops[:15]]
        result["opCalls"] = sum(e.count for e in prof.key_averages())
    else:
        result = run()
    result["peakRssBytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps(result))


if __name__ == "__main__":
    main()
