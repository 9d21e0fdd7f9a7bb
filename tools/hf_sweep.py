"""Survey of Hugging Face transformers architectures: a small random-weight configuration
of each exported, imported, built and compared with torch eager.

    pip install transformers   # not a dependency of tensorkiln
    python -m tensorkiln.tools.hf_sweep [--models llama,mixtral] [--dynamic] > hf.txt

One line per model: ``name STATUS detail`` with STATUS ``ok`` (every output within a
relative L2 error of 1e-4; the errors are listed), ``mismatch``, ``export_fail``
(torch.export itself failed: not ours) or ``error`` (the stage and the message); with
``--dynamic`` token models are exported for any sequence length and run at 5, 13 and 40
tokens (others, and those whose sequence torch.export specialises, report ``static``). A summary by status ends the run. Configurations are tiny (hidden size 32, two layers) so
that the whole survey takes minutes; the weights are random.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from tensorkiln.tools.model_check import output_tensors, survey

SEQUENCE, VOCABULARY = 13, 99
SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, vocab_size=VOCABULARY)
SEQ2SEQ = dict(vocab_size=VOCABULARY, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
               decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, use_cache=False)  # fmt: skip
STAGES = dict(hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 1, 1])


def _cases(T: Any, torch: Any) -> dict[str, Callable[[], tuple[Any, dict]]]:
    """name -> () -> (model, keyword inputs)."""
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, VOCABULARY, (2, SEQUENCE), generator=generator)
    mask = torch.ones(2, SEQUENCE, dtype=torch.long)
    mask[1, 9:] = 0  # a padded sequence
    image = torch.randn(2, 3, 32, 32, generator=generator)
    audio = torch.randn(2, 1600, generator=generator)
    text_inputs = {"input_ids": ids, "attention_mask": mask}
    seq2seq_inputs = {**text_inputs, "decoder_input_ids": ids[:, :5]}
    image_inputs = {"pixel_values": image}
    vit = dict(SMALL, image_size=32, patch_size=8)
    speech = dict(SMALL, conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16,
                  num_conv_pos_embedding_groups=4)  # fmt: skip

    def text(config: str, model: str, inputs: dict = text_inputs, **overrides: Any):
        return lambda: (getattr(T, model)(getattr(T, config)(**{**SMALL, **overrides})), inputs)

    def made(model: str, config: str, inputs: dict, **settings: Any):
        return lambda: (getattr(T, model)(getattr(T, config)(**settings)), inputs)

    kv = dict(num_key_value_heads=2)
    moe = dict(kv, num_experts=4, num_experts_per_tok=2)
    return {
        "bert": text("BertConfig", "BertModel"),
        "distilbert": text("DistilBertConfig", "DistilBertModel", dim=32, n_layers=2, n_heads=4, hidden_dim=64),
        "roberta": text("RobertaConfig", "RobertaModel"),
        "xlm_roberta": text("XLMRobertaConfig", "XLMRobertaModel"),
        "albert": text("AlbertConfig", "AlbertModel", embedding_size=16),
        "electra": text("ElectraConfig", "ElectraModel", embedding_size=16),
        "deberta_v2": text("DebertaV2Config", "DebertaV2Model"),
        "mobilebert": text("MobileBertConfig", "MobileBertModel", embedding_size=16, intermediate_size=32,
                           true_hidden_size=32, intra_bottleneck_size=32, num_feedforward_networks=1),
        "mpnet": text("MPNetConfig", "MPNetModel"),
        "convbert": text("ConvBertConfig", "ConvBertModel", embedding_size=32),
        "squeezebert": text("SqueezeBertConfig", "SqueezeBertModel", embedding_size=32),
        "big_bird": text("BigBirdConfig", "BigBirdModel", attention_type="original_full"),
        "xlnet": text("XLNetConfig", "XLNetModel", d_model=32, n_layer=2, n_head=4, d_inner=64),
        "gpt2": text("GPT2Config", "GPT2Model", n_embd=32, n_layer=2, n_head=4),
        "gpt_bigcode": text("GPTBigCodeConfig", "GPTBigCodeModel", n_embd=32, n_layer=2, n_head=4),
        "gpt_neox": text("GPTNeoXConfig", "GPTNeoXModel"),
        "gptj": text("GPTJConfig", "GPTJModel", n_embd=32, n_layer=2, n_head=4, rotary_dim=4),
        "codegen": text("CodeGenConfig", "CodeGenModel", n_embd=32, n_layer=2, n_head=4, rotary_dim=4),
        "llama": text("LlamaConfig", "LlamaModel", **kv),
        "mistral": text("MistralConfig", "MistralModel", **kv),
        "qwen2": text("Qwen2Config", "Qwen2Model", **kv),
        "phi": text("PhiConfig", "PhiModel"),
        "phi3": text("Phi3Config", "Phi3Model", pad_token_id=0, **kv),
        "gemma": text("GemmaConfig", "GemmaModel", head_dim=8, **kv),
        "stablelm": text("StableLmConfig", "StableLmModel", **kv),
        "starcoder2": text("Starcoder2Config", "Starcoder2Model", **kv),
        "falcon": text("FalconConfig", "FalconModel"),
        "opt": text("OPTConfig", "OPTModel", ffn_dim=64, word_embed_proj_dim=32),
        "bloom": text("BloomConfig", "BloomModel", n_layer=2, n_head=4),
        "qwen3": text("Qwen3Config", "Qwen3Model", head_dim=8, **kv),
        "gemma2": text("Gemma2Config", "Gemma2Model", head_dim=8, sliding_window=4, **kv),
        "gemma3": text("Gemma3TextConfig", "Gemma3TextModel", head_dim=8, sliding_window=4, **kv),
        "olmo2": text("Olmo2Config", "Olmo2Model", **kv),
        "cohere": text("CohereConfig", "CohereModel", **kv),
        "granite": text("GraniteConfig", "GraniteModel", **kv),
        "nemotron": text("NemotronConfig", "NemotronModel", **kv),
        "persimmon": text("PersimmonConfig", "PersimmonModel"),
        "mpt": text("MptConfig", "MptModel", d_model=32, n_heads=4, n_layers=2),
        "deberta": text("DebertaConfig", "DebertaModel"),
        "canine": text("CanineConfig", "CanineModel", downsampling_rate=2, local_transformer_stride=4),
        "roformer": text("RoFormerConfig", "RoFormerModel", embedding_size=32),
        "ibert": text("IBertConfig", "IBertModel"),
        "fnet": text("FNetConfig", "FNetModel", {"input_ids": ids}),  # token mixing by a 2-d FFT
        "layoutlm": text("LayoutLMConfig", "LayoutLMModel"),
        "jamba": text("JambaConfig", "JambaModel", num_experts=4, num_experts_per_tok=2, attn_layer_period=2,
                      attn_layer_offset=1, expert_layer_period=2, expert_layer_offset=1, mamba_d_state=8,
                      mamba_expand=2, **kv),
        "mixtral": text("MixtralConfig", "MixtralModel", num_local_experts=4, num_experts_per_tok=2, **kv),
        "qwen2_moe": text("Qwen2MoeConfig", "Qwen2MoeModel", moe_intermediate_size=16,
                          shared_expert_intermediate_size=32, **moe),
        "olmoe": text("OlmoeConfig", "OlmoeModel", **moe),
        "mamba": made("MambaModel", "MambaConfig", {"input_ids": ids}, vocab_size=VOCABULARY, hidden_size=32,
                      num_hidden_layers=2, state_size=8),
        "mamba2": made("Mamba2Model", "Mamba2Config", {"input_ids": ids}, vocab_size=VOCABULARY, hidden_size=32,
                       num_hidden_layers=2, state_size=8, num_heads=4, head_dim=16, n_groups=1, chunk_size=8),
        "rwkv": made("RwkvModel", "RwkvConfig", {"input_ids": ids}, vocab_size=VOCABULARY, hidden_size=32,
                     num_hidden_layers=2, attention_hidden_size=32, intermediate_size=64, context_length=32),
        "falcon_mamba": made("FalconMambaModel", "FalconMambaConfig", {"input_ids": ids}, vocab_size=VOCABULARY,
                             hidden_size=32, num_hidden_layers=2, state_size=8),
        "clip_text": made("CLIPTextModel", "CLIPTextConfig", {"input_ids": ids}, **SMALL),
        "t5": made("T5Model", "T5Config", {**seq2seq_inputs, "decoder_input_ids": ids[:, :7]}, vocab_size=VOCABULARY,
                   d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4, use_cache=False),
        "bart": made("BartModel", "BartConfig", text_inputs, **SEQ2SEQ),
        "pegasus": made("PegasusModel", "PegasusConfig", seq2seq_inputs, **SEQ2SEQ),
        "marian": made("MarianMTModel", "MarianConfig", seq2seq_inputs, pad_token_id=0, decoder_start_token_id=0,
                       **SEQ2SEQ),
        "m2m100": made("M2M100Model", "M2M100Config", seq2seq_inputs, **SEQ2SEQ),
        "mbart": made("MBartModel", "MBartConfig", seq2seq_inputs, **SEQ2SEQ),
        "blenderbot": made("BlenderbotModel", "BlenderbotConfig", seq2seq_inputs, **SEQ2SEQ),
        "mt5": made("MT5Model", "MT5Config", {**seq2seq_inputs, "decoder_input_ids": ids[:, :7]}, vocab_size=VOCABULARY,
                    d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4, use_cache=False),
        "led": made("LEDModel", "LEDConfig", seq2seq_inputs, attention_window=4, **SEQ2SEQ),
        "longformer": text("LongformerConfig", "LongformerModel", attention_window=4),
        "vit": made("ViTModel", "ViTConfig", image_inputs, **vit),
        "deit": made("DeiTModel", "DeiTConfig", image_inputs, **vit),
        "beit": made("BeitModel", "BeitConfig", image_inputs, use_relative_position_bias=True, **vit),
        "dinov2": made("Dinov2Model", "Dinov2Config", image_inputs, **vit),
        "clip_vision": made("CLIPVisionModel", "CLIPVisionConfig", image_inputs, **vit),
        "siglip_vision": made("SiglipVisionModel", "SiglipVisionConfig", image_inputs, **vit),
        "dpt": made("DPTModel", "DPTConfig", image_inputs, **dict(vit, num_hidden_layers=4, backbone_out_indices=[0, 1, 2, 3])),
        "mobilenet_v1": made("MobileNetV1Model", "MobileNetV1Config", image_inputs, image_size=32, depth_multiplier=0.25,
                             initializer_range=0.35),
        "mobilenet_v2": made("MobileNetV2Model", "MobileNetV2Config", image_inputs, image_size=32, depth_multiplier=0.25,
                             initializer_range=0.35),
        "convnextv2": made("ConvNextV2Model", "ConvNextV2Config", image_inputs, **STAGES),
        "swinv2": made("Swinv2Model", "Swinv2Config", image_inputs, image_size=32, patch_size=2, embed_dim=16,
                       depths=[1, 1], num_heads=[2, 4], window_size=4),
        "focalnet": made("FocalNetModel", "FocalNetConfig", image_inputs, image_size=32, patch_size=2, embed_dim=16,
                         depths=[1, 1]),
        "convnext": made("ConvNextModel", "ConvNextConfig", image_inputs, **STAGES),
        "resnet": made("ResNetModel", "ResNetConfig", image_inputs, embedding_size=8, **STAGES),
        "regnet": made("RegNetModel", "RegNetConfig", image_inputs, groups_width=8, embedding_size=8, **STAGES),
        "poolformer": made("PoolFormerModel", "PoolFormerConfig", image_inputs, **STAGES),
        "segformer": made("SegformerModel", "SegformerConfig", image_inputs, num_attention_heads=[1, 1, 2, 2],
                          decoder_hidden_size=32, **STAGES),
        "swin": made("SwinModel", "SwinConfig", image_inputs, image_size=32, patch_size=2, embed_dim=16,
                     depths=[1, 1], num_heads=[2, 4], window_size=4),
        "mobilevit": made("MobileViTModel", "MobileViTConfig", image_inputs, image_size=32, hidden_sizes=[16, 24, 32],
                          neck_hidden_sizes=[8, 8, 16, 16, 24, 24, 32]),
        "levit": made("LevitModel", "LevitConfig", image_inputs, image_size=32, hidden_sizes=[16, 32, 48],
                      num_attention_heads=[1, 2, 3], depths=[1, 1, 1], key_dim=[8, 8, 8]),
        "detr": lambda: (T.DetrModel(T.DetrConfig(
            use_timm_backbone=False, use_pretrained_backbone=False, num_queries=10, d_model=32, encoder_layers=1,
            decoder_layers=1, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
            decoder_ffn_dim=64, backbone_config=T.ResNetConfig(embedding_size=8, out_features=["stage4"], **STAGES),
        )), image_inputs),  # fmt: skip
        "wav2vec2": made("Wav2Vec2Model", "Wav2Vec2Config", {"input_values": audio}, **speech),
        "hubert": made("HubertModel", "HubertConfig", {"input_values": audio}, **speech),
        "data2vec_audio": made("Data2VecAudioModel", "Data2VecAudioConfig", {"input_values": audio}, **speech),
        "sew": made("SEWModel", "SEWConfig", {"input_values": audio}, squeeze_factor=2, **speech),
        "unispeech": made("UniSpeechModel", "UniSpeechConfig", {"input_values": audio}, **speech),
        "wav2vec2_conformer": made("Wav2Vec2ConformerModel", "Wav2Vec2ConformerConfig", {"input_values": audio},
                                   conv_depthwise_kernel_size=3, position_embeddings_type="relative", **speech),
        "ast": made("ASTModel", "ASTConfig", {"input_values": torch.randn(2, 60, 16, generator=generator)},
                    num_mel_bins=16, max_length=60, frequency_stride=4, time_stride=4, patch_size=8, **SMALL),
        "whisper_encoder": lambda: (T.WhisperModel(T.WhisperConfig(
            num_mel_bins=16, max_source_positions=30, pad_token_id=0, bos_token_id=1, eos_token_id=2,
            decoder_start_token_id=1, **SEQ2SEQ,
        )).encoder, {"input_features": torch.randn(2, 16, 60, generator=generator)}),  # fmt: skip
    }  # fmt: skip


#: token inputs whose sequence axis (1) is symbolic with ``--dynamic``
SEQUENCE_INPUTS = ("input_ids", "attention_mask", "decoder_input_ids")


def _dynamic_shapes(inputs: dict) -> dict | None:
    """The sequence axis of each token input dynamic (``Dim.AUTO``: torch relates the
    lengths or specialises them itself), or None."""
    import torch

    if not any(name in inputs for name in SEQUENCE_INPUTS):
        return None
    return {name: ({1: torch.export.Dim.AUTO} if name in SEQUENCE_INPUTS else None) for name in inputs}


def _specialised(module: Any) -> list[str]:
    """The token inputs of an imported module whose sequence axis is static (torch.export
    specialised it)."""
    from tensorkiln.dialects.graph.types import shape_of

    arguments = module.ops.first.body.block.args
    return [a.name_hint for a in arguments if a.name_hint in SEQUENCE_INPUTS and isinstance(shape_of(a.type)[1], int)]


def _resized(inputs: dict, length: int) -> dict:
    """The token inputs cut or tiled to ``length`` (the decoder's to ``length - 2``)."""
    out = {}
    for name, t in inputs.items():
        if name in SEQUENCE_INPUTS:
            n = length - 2 if name == "decoder_input_ids" else length
            t = t.repeat(1, -(-n // t.shape[1]))[:, :n]
        out[name] = t
    return out


def check(make: Callable[[], tuple[Any, dict]], dynamic: bool = False) -> tuple[str, str]:
    """(status, detail) of one model; with ``dynamic``, exported for any sequence length
    and run at three."""
    import torch

    import tensorkiln as tk
    from tensorkiln.frontends.torch import from_exported_program

    stage = "make"
    try:
        model, inputs = make()
        model.eval()
        if hasattr(model, "config"):
            model.config.use_cache = False
        shapes = _dynamic_shapes(inputs) if dynamic else None
        if dynamic and shapes is None:
            return "static", "no token inputs"
        with torch.no_grad():  # once before export: some models set themselves up on the first call (RWKV)
            model(**inputs)
        stage = "export"
        try:
            program = torch.export.export(model, (), inputs, dynamic_shapes=shapes, strict=False)
        except Exception as error:  # torch's failure, not ours
            return "export_fail", f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"
        stage = "import"
        module = from_exported_program(program)
        if shapes is not None and _specialised(module):
            return "static", f"torch.export made the sequence of {', '.join(_specialised(module))} static"
        stage = "build"
        lib = tk.build(module)
        errors = []
        for run in [inputs] if shapes is None else [_resized(inputs, n) for n in (5, 13, 40)]:
            stage = "run"
            with torch.no_grad():
                want = [t.numpy() for t in output_tensors(model(**run))]
            got = lib(*(t.numpy() for t in run.values()))
            got = list(got) if isinstance(got, tuple) else [got]
            if len(got) != len(want) or any(g.shape != w.shape for g, w in zip(got, want)):
                sizes = [g.shape for g in got], [w.shape for w in want]
                return "mismatch", f"outputs {sizes[0]}, torch {sizes[1]}"
            errors += [float(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30)) for g, w in zip(got, want)]
    except Exception as error:
        return "error", f"{stage}: {type(error).__name__}: {' | '.join(str(error).splitlines()[:3])[:300]}"
    status = "ok" if max(errors, default=0.0) < 1e-4 else "mismatch"
    return status, "rel. L2 errors " + " ".join(f"{e:.1e}" for e in errors)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", help="comma-separated names (default: all)")
    parser.add_argument("--dynamic", action="store_true", help="a symbolic sequence length (token models)")
    args = parser.parse_args()
    try:
        import torch
        import transformers
    except ImportError as error:
        raise SystemExit(f"hf_sweep needs torch and transformers ({error}): pip install transformers") from error
    transformers.logging.set_verbosity_error()
    cases = _cases(transformers, torch)
    names = args.models.split(",") if args.models else list(cases)
    unknown = sorted(set(names) - set(cases))
    if unknown:
        raise SystemExit(f"unknown models {unknown}; known: {', '.join(cases)}")
    survey((name, functools.partial(check, cases[name], args.dynamic)) for name in names)


if __name__ == "__main__":
    main()
