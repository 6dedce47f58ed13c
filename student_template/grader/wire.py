"""Values on the wire between the judge and the student's process.

Plain JSON with tagged tensors. The judge never unpickles anything that the
student's process produced: a tensor crosses as dtype, shape and raw bytes and
comes back as a plain CPU `torch.Tensor`, whatever subclass the student returned.
"""

import base64
import json

import numpy as np
import torch

_DTYPES = {
    "float16": (torch.float16, np.float16),
    "bfloat16": (torch.bfloat16, None),
    "float32": (torch.float32, np.float32),
    "float64": (torch.float64, np.float64),
    "int8": (torch.int8, np.int8),
    "int16": (torch.int16, np.int16),
    "int32": (torch.int32, np.int32),
    "int64": (torch.int64, np.int64),
    "uint8": (torch.uint8, np.uint8),
    "bool": (torch.bool, np.bool_),
}
_NAME_OF_DTYPE = {torch_dtype: name for name, (torch_dtype, _) in _DTYPES.items()}


class Foreign:
    """A value of a type the judge does not compare (a numpy array, a module...)."""

    def __init__(self, type_name, text, array=None):
        self.type_name = type_name
        self.text = text
        self.array = array

    def __repr__(self):
        return f"<{self.type_name}: {self.text}>"


def _tensor_payload(tensor):
    tensor = torch.Tensor.detach(tensor)
    if tensor.dtype == torch.bfloat16:
        tensor = tensor.float()
    cpu = torch.Tensor.contiguous(torch.Tensor.cpu(tensor))
    array = cpu.numpy()
    return {
        "dtype": _NAME_OF_DTYPE.get(cpu.dtype, str(cpu.dtype)),
        "shape": list(array.shape),
        "data": base64.b64encode(array.tobytes()).decode("ascii"),
    }


def encode(value):
    """Turn a value into JSON-ready data (both directions use this)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, torch.Tensor):
        payload = _tensor_payload(value)
        payload["device"] = str(value.device)
        if type(value) not in (torch.Tensor, torch.nn.Parameter):
            payload["class"] = type(value).__qualname__
        return {"$tensor": payload}
    if isinstance(value, np.ndarray):
        return {"$foreign": {"type": "numpy.ndarray", "text": f"shape {list(value.shape)}",
                             "array": _tensor_payload(torch.from_numpy(np.ascontiguousarray(value)))
                             if value.dtype.name in _DTYPES else None}}
    if isinstance(value, tuple):
        return {"$tuple": [encode(item) for item in value]}
    if isinstance(value, list):
        return [encode(item) for item in value]
    if isinstance(value, dict):
        return {"$dict": [[str(key), encode(item)] for key, item in value.items()]}
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    text = object.__repr__(value)
    return {"$foreign": {"type": type(value).__module__ + "." + type(value).__qualname__, "text": text[:200]}}


def _tensor_from_payload(payload):
    name = payload.get("dtype")
    if name not in _DTYPES:
        raise ValueError(f"unsupported tensor dtype {name!r}")
    torch_dtype, np_dtype = _DTYPES[name]
    shape = [int(size) for size in payload["shape"]]
    raw = base64.b64decode(payload["data"], validate=True)
    if np_dtype is None:  # bfloat16 travels as float32
        np_dtype, torch_dtype = np.float32, torch.float32
    expected = int(np.prod(shape, dtype=np.int64)) * np.dtype(np_dtype).itemsize
    if len(raw) != expected:
        raise ValueError("tensor payload has the wrong size")
    array = np.frombuffer(raw, dtype=np_dtype).reshape(shape).copy()
    return torch.from_numpy(array).to(torch_dtype)


def decode(data, device=None):
    """Inverse of `encode`. Tensors land on `device` (default: CPU) as plain tensors.

    Each decoded tensor carries `.wire_device` (where the student's tensor
    lived) and `.wire_class` (its class, if it was a subclass).
    """
    if isinstance(data, list):
        return [decode(item, device) for item in data]
    if not isinstance(data, dict):
        return data
    if "$tensor" in data:
        payload = data["$tensor"]
        tensor = _tensor_from_payload(payload)
        if device is not None:
            tensor = tensor.to(device)
        tensor.wire_device = str(payload.get("device", "cpu"))
        tensor.wire_class = payload.get("class")
        return tensor
    if "$tuple" in data:
        return tuple(decode(item, device) for item in data["$tuple"])
    if "$dict" in data:
        return {str(key): decode(item, device) for key, item in data["$dict"]}
    if "$foreign" in data:
        info = data["$foreign"]
        array = _tensor_from_payload(info["array"]) if info.get("array") else None
        return Foreign(str(info.get("type")), str(info.get("text")), array)
    raise ValueError("unrecognised value on the wire")


def dumps(message):
    return json.dumps(message, allow_nan=True).encode("utf-8")


def loads(raw):
    return json.loads(raw.decode("utf-8"))
