#!/usr/bin/env python3
# Regenerate with: python3 proof/testdata/batch_challenge_vectors.py > proof/testdata/batch_challenge_vectors.json
# Computes the batch challenge of proof/batch.go's layout independently of the
# Go code: the list's RFC 8785 bytes (its items hold ASCII strings only, so
# sorted keys and no white space are its canonical form), their SHA-256 as hex,
# and SHA-256 over length-prefixed fields (4-byte big-endian length).
import hashlib, json, struct

def lp(b):
    return struct.pack('>I', len(b)) + b

def item(i, decision):
    return {"approval_id": "appr_batch%02d" % i, "payload_sha256": ("%x" % (i % 16)) * 64, "decision": decision}

cases = [
    ("three approved", [item(i, "approve") for i in range(3)], bytes(range(32))),
    ("one denied", [item(7, "deny")], bytes([0xab] * 32)),
]
out = []
for name, items, nonce in cases:
    canonical = json.dumps(items, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    list_sha = hashlib.sha256(canonical).hexdigest()
    pre = lp(b"countersign/batch/v1") + lp(list_sha.encode()) + lp(nonce)
    out.append({"name": name, "items": items, "nonce_hex": nonce.hex(), "list_canonical": canonical.decode(),
                "list_sha256": list_sha, "preimage_hex": pre.hex(), "challenge_hex": hashlib.sha256(pre).hexdigest()})
print(json.dumps({"comment": "Batch challenges of countersign/batch/v1: SHA-256 over lp(domain) || lp(hex SHA-256 of the list's RFC 8785 bytes) || lp(nonce). Computed with Python's hashlib, not with the Go code.", "vectors": out}, indent=2, ensure_ascii=False))
