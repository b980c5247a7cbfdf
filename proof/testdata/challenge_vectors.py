#!/usr/bin/env python3
# Regenerate with: python3 proof/testdata/challenge_vectors.py > proof/testdata/challenge_vectors.json
# Computes the decision challenge of proof/proof.go's layout independently of
# the Go code: SHA-256 over length-prefixed fields (4-byte big-endian length).
import hashlib, json, struct

def lp(b):
    return struct.pack('>I', len(b)) + b

def challenge(domain, approval_id, payload_sha256, decision, nonce):
    msg = b''.join(lp(f) for f in [domain.encode(), approval_id.encode(), payload_sha256.encode(), decision.encode(), nonce])
    return msg, hashlib.sha256(msg).hexdigest()

domain = "countersign/decision/v1"
h1 = hashlib.sha256(b'{"pull_request":{"head":"abcdef1234567","number":900,"repo":"acme/web","title":"Fix login redirect"}}').hexdigest()
h2 = hashlib.sha256(b'{"decision":{"options":["Ship today","Wait for Monday"]}}').hexdigest()
q = "Does this touch the session cookie?"
r = "Use the staging bucket instead"
h3 = hashlib.sha256(b'{"tool_call":{"arguments":{"content":"hello","path":"/srv/prod/notes.txt"},"server":"filesystem","tool":"write_file"}}').hexdigest()
e = b'{"tool_call":{"arguments":{"content":"hello, edited","path":"/srv/prod/notes.txt"},"server":"filesystem","tool":"write_file"}}'
# A window: the same agent, kind and target approved for 30 minutes, as its
# RFC 8785 JSON (ASCII only, so sorted keys and no white space are all of it).
w = '{"agent":"agent:bot","kind":"tool_call","minutes":30,"target":{"server":"filesystem","tool":"write_file"}}'
assert w == json.dumps({"target": {"tool": "write_file", "server": "filesystem"}, "minutes": 30, "kind": "tool_call", "agent": "agent:bot"}, sort_keys=True, separators=(",", ":"))
cases = [
    ("approve", "appr_aaaaaaaaaaaaaaaa", h1, "approve", bytes(range(32))),
    ("deny", "appr_aaaaaaaaaaaaaaaa", h1, "deny", bytes(range(32))),
    ("not_mine", "appr_bbbbbbbbbbbbbbbb", h1, "not_mine", bytes([0xff] * 32)),
    ("option", "appr_cccccccccccccccc", h2, "option:1", bytes([0] * 32)),
    ("question", "appr_dddddddddddddddd", h1, "question:" + hashlib.sha256(q.encode()).hexdigest(), bytes(range(100, 132))),
    ("utf-8 approval id", "appr_é", h1, "approve", bytes(range(32))),
    ("reply", "appr_eeeeeeeeeeeeeeee", h3, "reply:" + hashlib.sha256(r.encode()).hexdigest(), bytes(range(200, 232))),
    ("approve_edited", "appr_ffffffffffffffff", h3, "approve_edited:" + hashlib.sha256(e).hexdigest(), bytes(range(7, 39))),
    ("approve_for", "appr_ffffffffffffffff", h3, "approve_for:" + hashlib.sha256(w.encode()).hexdigest(), bytes(range(32, 64))),
]
out = []
for name, aid, h, d, nonce in cases:
    msg, ch = challenge(domain, aid, h, d, nonce)
    v = {"name": name, "domain": domain, "approval_id": aid, "payload_sha256": h, "decision": d,
         "nonce_hex": nonce.hex(), "preimage_hex": msg.hex(), "challenge_hex": ch}
    if d.startswith("question:"):
        v["question"] = q
    if d.startswith("reply:"):
        v["reply"] = r
    if d.startswith("approve_edited:"):
        v["edited_payload"] = e.decode()
    if d.startswith("approve_for:"):
        v["approve_for"] = w
    out.append(v)
print(json.dumps({"comment": "Decision challenges of countersign/decision/v1: SHA-256 over lp(domain) || lp(approval_id) || lp(payload_sha256) || lp(decision) || lp(nonce), lp(x) = 4-byte big-endian length of x, then x. Computed with Python's hashlib and struct.pack('>I', len), not with the Go code.", "vectors": out}, indent=2, ensure_ascii=False))
