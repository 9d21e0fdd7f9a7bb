"""A sanity check of an ELF shared library before ``dlopen``: ``dlopen`` of a truncated
file can crash the process (SIGBUS when a mapped segment lies past the end of the
file), so the runtime checks the header and that every table and loaded segment lies
inside the file first. Stdlib only."""

from __future__ import annotations

import struct

ELF_MAGIC = b"\x7fELF"
PT_LOAD = 1


def elf_problem(blob: bytes) -> str | None:
    """What is wrong with ``blob`` as a 64-bit little-endian ELF shared library, or None."""
    if len(blob) < 64 or not blob.startswith(ELF_MAGIC):
        return "not an ELF file"
    if blob[4] != 2 or blob[5] != 1:
        return "not a 64-bit little-endian ELF file"
    e_type = struct.unpack_from("<H", blob, 16)[0]
    if e_type != 3:  # ET_DYN
        return f"not a shared library (ELF type {e_type})"
    e_phoff, e_shoff = struct.unpack_from("<QQ", blob, 32)
    e_phentsize, e_phnum, e_shentsize, e_shnum = struct.unpack_from("<HHHH", blob, 54)
    size = len(blob)
    if e_phoff + e_phnum * e_phentsize > size:
        return "truncated (program headers past the end of the file)"
    if e_shnum and e_shoff + e_shnum * e_shentsize > size:
        return "truncated (section headers past the end of the file)"
    if e_phentsize < 56:
        return "bad program header size"
    for k in range(e_phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", blob, e_phoff + k * e_phentsize)
        if p_type == PT_LOAD and p_offset + p_filesz > size:
            return f"truncated (segment {k} ends at byte {p_offset + p_filesz}, the file has {size})"
    return None


__all__ = ["elf_problem"]
