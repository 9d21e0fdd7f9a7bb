"""A sanity check of an ELF shared library before ``dlopen``: ``dlopen`` of a truncated
file can crash the process (SIGBUS when a mapped segment lies past the end of the
file), and for some damaged headers glibc's only word is "No such file or directory";
so the runtime checks the header (class, byte order, version, type, machine, table
entry sizes) and that every table and loaded segment lies inside the file first.
Stdlib only."""

from __future__ import annotations

import platform
import struct

ELF_MAGIC = b"\x7fELF"
PT_LOAD = 1

#: ``e_machine`` of the machines the runtime knows, by ``platform.machine()``
MACHINES = {"x86_64": 62, "AMD64": 62, "aarch64": 183, "arm64": 183, "ppc64le": 21, "riscv64": 243, "s390x": 22}


def elf_problem(blob: bytes) -> str | None:
    """What is wrong with ``blob`` as a 64-bit little-endian ELF shared library, or None."""
    if len(blob) < 64 or not blob.startswith(ELF_MAGIC):
        return "not an ELF file"
    if blob[4] != 2 or blob[5] != 1:
        return "not a 64-bit little-endian ELF file"
    if blob[6] != 1 or struct.unpack_from("<I", blob, 20)[0] != 1:
        return "unknown ELF version"
    e_type, e_machine = struct.unpack_from("<HH", blob, 16)
    if e_type != 3:  # ET_DYN
        return f"not a shared library (ELF type {e_type})"
    expected = MACHINES.get(platform.machine())
    if expected is not None and e_machine != expected:
        return f"built for another machine (ELF machine {e_machine}, this {platform.machine()} machine is {expected})"
    e_phoff, e_shoff = struct.unpack_from("<QQ", blob, 32)
    e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum = struct.unpack_from("<HHHHH", blob, 52)
    if e_ehsize != 64 or (e_shnum and e_shentsize != 64):
        return "bad ELF header or section header size"
    size = len(blob)
    if e_phoff + e_phnum * e_phentsize > size:
        return "truncated (program headers past the end of the file)"
    if e_shnum and e_shoff + e_shnum * e_shentsize > size:
        return "truncated (section headers past the end of the file)"
    if e_phentsize != 56:
        return "bad program header size"
    for k in range(e_phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", blob, e_phoff + k * e_phentsize)
        if p_type == PT_LOAD and p_offset + p_filesz > size:
            return f"truncated (segment {k} ends at byte {p_offset + p_filesz}, the file has {size})"
    return None


__all__ = ["elf_problem"]
