"""What kind of file a path holds, by its first bytes (never by its name alone): the command line
says which format it found when it cannot read one."""
import json

SAFETENSORS = "safetensors"
NUMPY_ZIP = "numpy .npz archive"
PYTORCH_ZIP = "PyTorch zip checkpoint (torch.save, torch >= 1.6)"
PYTORCH_LEGACY = "PyTorch legacy checkpoint (pickle)"
PICKLE = "Python pickle (not a PyTorch checkpoint)"
LEGACY_MAGIC = b"\x8a\x0a" + (0x1950a86a20f9469cfc6c).to_bytes(10, "little")  # torch's magic number as a pickle LONG1
NUMPY_ARRAY = "numpy .npy array"
GGUF = "GGUF model"
ONNX = "ONNX model (protobuf)"
UNKNOWN = "unknown format"


def _zip_kind(path):
    import zipfile
    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return UNKNOWN
    if any(n.endswith("/data.pkl") or n == "data.pkl" for n in names):
        return PYTORCH_ZIP
    if names and all(n.endswith(".npy") for n in names):
        return NUMPY_ZIP
    return "zip archive (%d members)" % len(names)


def sniff(path):
    """One of the names above (or a short description) for the file at ``path``."""
    with open(path, "rb") as f:
        head = f.read(16)
        if len(head) >= 9:
            n = int.from_bytes(head[:8], "little")
            if 2 <= n <= 100_000_000 and head[8:9] == b"{":
                f.seek(8)
                try:
                    json.loads(f.read(n))
                    return SAFETENSORS
                except ValueError:
                    pass
    if head.startswith(b"PK\x03\x04"):
        return _zip_kind(path)
    if head.startswith(b"\x93NUMPY"):
        return NUMPY_ARRAY
    if head.startswith(b"GGUF"):
        return GGUF
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return PYTORCH_LEGACY if head[2:14] == LEGACY_MAGIC else PICKLE
    # ONNX's ModelProto starts with field 1 (ir_version, a varint: byte 0x08) and has no magic number
    if head[:1] == b"\x08" and str(path).endswith(".onnx"):
        return ONNX
    return UNKNOWN
