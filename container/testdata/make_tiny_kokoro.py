#!/usr/bin/python3
"""Builds a tiny stand-in for the Kokoro-82M ONNX export, for tests.

The real export (onnx-community/Kokoro-82M-v1.0-ONNX) takes
  input_ids int64 [1, N]  (phoneme token ids, padded with 0 at both ends)
  style     float32 [1, 256] (row N-2 of a voice file)
  speed     float32 [1]
and returns waveform float32 [num_samples] at 24 kHz. This model keeps that
signature and makes every token a short sine burst whose pitch follows the
token id (and the speed) and whose loudness follows the style vector, so the
audio is non-silent and depends on the input. It is not speech.

Writes, under the directory given as the only argument (default: tiny_kokoro
beside this script):
  onnx/model.onnx, voices/af_heart.bin, tokenizer.json,
  config.json, manifest.json (size and SHA-256 of every other file);
and beside that directory tiny_kokoro_tokens_int32.onnx, the same model in
the older signature (tokens, int32 speed), for the signature-reading tests.

Run with Debian's python3-onnx and python3-numpy:
  /usr/bin/python3 container/testdata/make_tiny_kokoro.py
"""

import hashlib
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SAMPLE_RATE = 24000
SAMPLES_PER_TOKEN = 240  # 10 ms per token
STYLE_DIM = 256
STYLE_ROWS = 510

# Kokoro's phoneme vocabulary (model.vocab of tokenizer.json): one character
# each; "$" (0) is the pad token at both ends of input_ids.
VOCAB_ITEMS = [
    ("$", 0), (";", 1), (":", 2), (",", 3), (".", 4), ("!", 5), ("?", 6),
    ("\u2014", 9), ("\u2026", 10), ('"', 11), ("(", 12), (")", 13),
    ("\u201c", 14), ("\u201d", 15), (" ", 16), ("\u0303", 17), ("\u02a3", 18),
    ("\u02a5", 19), ("\u02a6", 20), ("\u02a8", 21), ("\u1d5d", 22),
    ("\uab67", 23), ("A", 24), ("I", 25), ("O", 31), ("Q", 33), ("S", 35),
    ("T", 36), ("W", 39), ("Y", 41), ("\u1d4a", 42), ("a", 43), ("b", 44),
    ("c", 45), ("d", 46), ("e", 47), ("f", 48), ("h", 50), ("i", 51),
    ("j", 52), ("k", 53), ("l", 54), ("m", 55), ("n", 56), ("o", 57),
    ("p", 58), ("q", 59), ("r", 60), ("s", 61), ("t", 62), ("u", 63),
    ("v", 64), ("w", 65), ("x", 66), ("y", 67), ("z", 68), ("\u0251", 69),
    ("\u0250", 70), ("\u0252", 71), ("\u00e6", 72), ("\u03b2", 75),
    ("\u0254", 76), ("\u0255", 77), ("\u00e7", 78), ("\u0256", 80),
    ("\u00f0", 81), ("\u02a4", 82), ("\u0259", 83), ("\u025a", 85),
    ("\u025b", 86), ("\u025c", 87), ("\u025f", 90), ("\u0261", 92),
    ("\u0265", 99), ("\u0268", 101), ("\u026a", 102), ("\u029d", 103),
    ("\u026f", 110), ("\u0270", 111), ("\u014b", 112), ("\u0273", 113),
    ("\u0272", 114), ("\u0274", 115), ("\u00f8", 116), ("\u0278", 118),
    ("\u03b8", 119), ("\u0153", 120), ("\u0279", 123), ("\u027e", 125),
    ("\u027b", 126), ("\u0281", 128), ("\u027d", 129), ("\u0282", 130),
    ("\u0283", 131), ("\u0288", 132), ("\u02a7", 133), ("\u028a", 135),
    ("\u028b", 136), ("\u028c", 138), ("\u0263", 139), ("\u0264", 140),
    ("\u03c7", 142), ("\u028e", 143), ("\u0292", 147), ("\u0294", 148),
    ("\u02c8", 156), ("\u02cc", 157), ("\u02d0", 158), ("\u02b0", 162),
    ("\u02b2", 164), ("\u2193", 169), ("\u2192", 171), ("\u2197", 172),
    ("\u2198", 173), ("\u1d7b", 177),
]


def build_model(ids_name="input_ids", speed_type=TensorProto.FLOAT):
    """Returns the ONNX model: waveform = amp(style) * sin(2*pi*f(id)*speed*t).

    ids_name and speed_type select the export variant: the current one
    (input_ids, float32 speed) or the older one (tokens, and int32 speed as
    some exports declare it).
    """
    t = (np.arange(SAMPLES_PER_TOKEN, dtype=np.float32) / SAMPLE_RATE).reshape(1, 1, SAMPLES_PER_TOKEN)
    inits = [
        numpy_helper.from_array(t, "t"),
        numpy_helper.from_array(np.array([2.0 * np.pi * 4.0], dtype=np.float32), "two_pi_hz_per_id"),
        numpy_helper.from_array(np.array([2.0 * np.pi * 110.0], dtype=np.float32), "two_pi_base_hz"),
        numpy_helper.from_array(np.array([2], dtype=np.int64), "axis2"),
        numpy_helper.from_array(np.array([-1], dtype=np.int64), "flat"),
        numpy_helper.from_array(np.array([0.3], dtype=np.float32), "amp_scale"),
        numpy_helper.from_array(np.array([0.1], dtype=np.float32), "amp_floor"),
    ]
    nodes = [
        helper.make_node("Cast", [ids_name], ["ids_f"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["speed"], ["speed_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["ids_f", "two_pi_hz_per_id"], ["w_id"]),
        helper.make_node("Add", ["w_id", "two_pi_base_hz"], ["w"]),
        helper.make_node("Mul", ["w", "speed_f"], ["w_speed"]),
        helper.make_node("Unsqueeze", ["w_speed", "axis2"], ["w3"]),
        helper.make_node("Mul", ["w3", "t"], ["phase"]),
        helper.make_node("Sin", ["phase"], ["tone"]),
        helper.make_node("ReduceMean", ["style"], ["style_mean"], axes=[0, 1], keepdims=0),
        helper.make_node("Sigmoid", ["style_mean"], ["style_gate"]),
        helper.make_node("Mul", ["style_gate", "amp_scale"], ["amp_var"]),
        helper.make_node("Add", ["amp_var", "amp_floor"], ["amp"]),
        helper.make_node("Mul", ["tone", "amp"], ["scaled"]),
        helper.make_node("Reshape", ["scaled", "flat"], ["waveform"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_kokoro",
        [
            helper.make_tensor_value_info(ids_name, TensorProto.INT64, [1, "sequence_length"]),
            helper.make_tensor_value_info("style", TensorProto.FLOAT, [1, STYLE_DIM]),
            helper.make_tensor_value_info("speed", speed_type, [1]),
        ],
        [helper.make_tensor_value_info("waveform", TensorProto.FLOAT, ["num_samples"])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="make_tiny_kokoro")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def voice(seed):
    """Returns a deterministic float32 [510][1][256] style table."""
    i = np.arange(STYLE_ROWS, dtype=np.float32).reshape(STYLE_ROWS, 1, 1)
    j = np.arange(STYLE_DIM, dtype=np.float32).reshape(1, 1, STYLE_DIM)
    return (0.5 * np.sin(0.01 * seed * i + 0.1 * j) + 0.2 * seed - 0.3).astype(np.float32)


def tokenizer_json():
    """Returns tokenizer.json in the layout of the Kokoro ONNX export."""
    chars = "".join(c for c, _ in VOCAB_ITEMS if c != "$")
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": 0, "content": "$", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}],
        "normalizer": {"type": "Replace", "pattern": {"Regex": "[^" + chars.replace("\\", "\\\\") + "]"}, "content": ""},
        "pre_tokenizer": {"type": "Split", "pattern": {"Regex": ""}, "behavior": "Isolated", "invert": False},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "$", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "$", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"$": {"id": "$", "ids": [0], "tokens": ["$"]}},
        },
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": dict(VOCAB_ITEMS), "unk_token": "$"},
    }


def write(root, rel, data):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "tiny_kokoro")
    files = {
        "onnx/model.onnx": build_model().SerializeToString(),
        "voices/af_heart.bin": voice(1.0).tobytes(),
        "tokenizer.json": (json.dumps(tokenizer_json(), ensure_ascii=False, indent=2) + "\n").encode("utf-8"),
        "config.json": b'{"model_type": "style_text_to_speech_2"}\n',
    }
    manifest = {"files": []}
    for rel in sorted(files):
        write(root, rel, files[rel])
        manifest["files"].append({"path": rel, "size": len(files[rel]), "sha256": hashlib.sha256(files[rel]).hexdigest()})
    write(root, "manifest.json", (json.dumps(manifest, indent=2) + "\n").encode("utf-8"))
    variant = build_model("tokens", TensorProto.INT32).SerializeToString()
    with open(os.path.join(os.path.dirname(root), "tiny_kokoro_tokens_int32.onnx"), "wb") as f:
        f.write(variant)
    print("wrote", root)


if __name__ == "__main__":
    main()
