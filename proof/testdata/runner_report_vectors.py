#!/usr/bin/env python3
# Regenerate with: python3 proof/testdata/runner_report_vectors.py > proof/testdata/runner_report_vectors.json
# Computes runner report signatures (docs/runners.md) independently of the Go
# code: Ed25519 (deterministic, RFC 8032) over length-prefixed fields
# (4-byte big-endian length, then the bytes).
import base64, hashlib, json, struct
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives import serialization

DOMAIN = "countersign/runner-report/v1"
SEED = bytes(range(32))  # a test key: never trust it

def b64(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()

def lp(b):
    return struct.pack(">I", len(b)) + b

def message(approval_id, payload_sha256, step, note, signed_at):
    note_sha = hashlib.sha256(note.encode()).hexdigest()
    fields = [DOMAIN, approval_id, payload_sha256, step, note_sha, str(signed_at)]
    return b"".join(lp(f.encode()) for f in fields), note_sha

key = Ed25519PrivateKey.from_private_bytes(SEED)
pub = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)

cases = [
    ("started", "appr_aaaaaaaaaaaaaaaa", "09f49cf67620ba8812cef8d3f721b486d97e5d5208deb1a2a06e17cfe2e36fe3", "started", "claimed by runner rnr_bbbbbbbbbbbbbbbb", 1798761600),
    ("step with multi-line output", "appr_aaaaaaaaaaaaaaaa", "09f49cf67620ba8812cef8d3f721b486d97e5d5208deb1a2a06e17cfe2e36fe3", "step", "hello world\nmigrated 3 tables ✓", 1798761601),
    ("done with an empty note", "appr_aaaaaaaaaaaaaaaa", "09f49cf67620ba8812cef8d3f721b486d97e5d5208deb1a2a06e17cfe2e36fe3", "done", "", 1798761602),
    ("failed", "appr_cccccccccccccccc", "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", "failed", "runner restarted; not run again", 1798761603),
]
vectors = []
for name, aid, sha, step, note, at in cases:
    msg, note_sha = message(aid, sha, step, note, at)
    vectors.append({
        "name": name, "approval_id": aid, "payload_sha256": sha, "step": step, "note": note,
        "note_sha256": note_sha, "signed_at": at, "message_hex": msg.hex(), "signature": b64(key.sign(msg)),
    })
print(json.dumps({
    "comment": "Runner report signatures of countersign/runner-report/v1 (docs/runners.md): Ed25519 over lp(domain) || lp(approval_id) || lp(payload_sha256) || lp(step) || lp(hex sha256 of note) || lp(decimal signed_at), lp(x) = 4-byte big-endian length of x, then x. Computed with Python's cryptography package, not with the Go code. The key is a test key: never trust it.",
    "domain": DOMAIN,
    "seed_hex": SEED.hex(),
    "runner_public_key": b64(pub),
    "vectors": vectors,
}, indent=2, ensure_ascii=False))
