"""A sanity check of an ELF shared library before ``dlopen``: ``dlopen`` of a truncated
file can crash the process (SIGBUS when a mapped segment lies past the end of the
file), and for some damaged headers glibc's only word is "No such file or directory";
so the runtime checks the header (class, byte order, version, type, machine, table
entry sizes) and that every table and loaded segment lies inside the file first. glibc
also maps and reads the program headers unchecked (a flipped bit in a segment's type,
address, size or flags crashed ``dlopen``): they must describe ordered, aligned,
non-overlapping loadable segments holding the dynamic section and every section the
program needs in memory. (tools/reliability_probes flips each bit of these headers of a
model library: none of the flips that pass these checks crashes ``dlopen``; checked not to
refuse the ~2,000 shared libraries of a Python environment with torch and scipy.)
Stdlib only."""

from __future__ import annotations

import platform
import struct
from typing import NamedTuple

ELF_MAGIC = b"\x7fELF"
PT_LOAD, PT_DYNAMIC, PT_NOTE = 1, 2, 4
PT_GNU_EH_FRAME, PT_GNU_RELRO, PT_GNU_PROPERTY = 0x6474E550, 0x6474E552, 0x6474E553
#: segment types of the ELF and GNU specifications (null, load, dynamic, interp, note,
#: shlib, phdr, tls; GNU eh_frame, stack, relro, property) and the ranges reserved for
#: operating systems and processors
KNOWN_SEGMENTS = {0, 1, 2, 3, 4, 5, 6, 7}
OS_AND_PROCESSOR_SEGMENTS = (0x60000000, 0x7FFFFFFF)
#: segments the loader reads in memory: they must lie inside a loadable segment (not
#: PT_TLS: its memory size counts the zero-filled .tbss, which need not be mapped)
MAPPED_TABLES = (PT_DYNAMIC, PT_NOTE, PT_GNU_EH_FRAME, PT_GNU_RELRO, PT_GNU_PROPERTY)
SHT_NULL, SHT_NOBITS = 0, 8
SHF_ALLOC, SHF_EXECINSTR, SHF_TLS = 2, 4, 0x400
PF_X = 1
#: a shared library's segments lie in the low 2**47 bytes of a user address space
MAX_ADDRESS = 2**47

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
    headers = [ProgramHeader(*struct.unpack_from("<IIQQQQQQ", blob, e_phoff + k * 56)) for k in range(e_phnum)]
    loads = [h for h in headers if h.type == PT_LOAD]
    return _segments_problem(headers, size) or _sections_problem(blob, e_phoff + e_phnum * 56, e_shoff, e_shnum, loads)


class ProgramHeader(NamedTuple):
    type: int
    flags: int
    offset: int
    vaddr: int
    paddr: int
    filesz: int
    memsz: int
    align: int


def _segments_problem(headers: list[ProgramHeader], size: int) -> str | None:
    """What the dynamic loader would trip on in the program headers: an unknown segment
    type, a loaded segment past the end of the file, misaligned, smaller in memory than
    in the file, out of address order or overlapping the one before; the dynamic section
    or another table outside the loaded segments. (glibc maps and reads these unchecked:
    a flipped bit in them crashed ``dlopen``.)"""
    loads = [h for h in headers if h.type == PT_LOAD]
    for k, h in enumerate(headers):
        if h.type not in KNOWN_SEGMENTS and not OS_AND_PROCESSOR_SEGMENTS[0] <= h.type <= OS_AND_PROCESSOR_SEGMENTS[1]:
            return f"program header {k} has an unknown segment type {h.type:#x}"
    if not loads:
        return "no loadable segment"
    for k, h in enumerate(loads):
        if h.offset + h.filesz > size:
            return f"truncated (segment {k} ends at byte {h.offset + h.filesz}, the file has {size})"
        if h.align & (h.align - 1) or (h.align > 1 and (h.vaddr - h.offset) % h.align):
            return f"loadable segment {k} is misaligned (alignment {h.align:#x})"
        if h.memsz < h.filesz or h.vaddr + h.memsz > MAX_ADDRESS or (h.flags & PF_X and h.memsz != h.filesz):
            # (code is all in the file: only data segments have a zero-filled tail, .bss)
            return f"loadable segment {k} has a bad size ({h.filesz} bytes in the file, {h.memsz} in memory)"
        if k and h.vaddr < loads[k - 1].vaddr + loads[k - 1].memsz:
            return f"loadable segment {k} is out of address order or overlaps the one before"
    dynamic = [h for h in headers if h.type == PT_DYNAMIC]
    if len(dynamic) != 1:
        return f"{len(dynamic)} dynamic sections (a shared library has one)"
    for h in headers:
        if h.type in MAPPED_TABLES and not _inside_a_load(h, loads):
            return f"a segment of type {h.type:#x} lies outside the loaded segments"
    return None


def _covers(load: ProgramHeader, h: ProgramHeader) -> bool:
    """``h``'s memory lies inside ``load``, at the file offset ``load`` maps it from."""
    inside = load.vaddr <= h.vaddr and h.vaddr + h.memsz <= load.vaddr + load.memsz
    return inside and (h.filesz == 0 or h.offset - load.offset == h.vaddr - load.vaddr)


def _inside_a_load(h: ProgramHeader, loads: list[ProgramHeader]) -> bool:
    return any(_covers(load, h) for load in loads)


def _sections_problem(blob: bytes, table_end: int, e_shoff: int, e_shnum: int, loads: list[ProgramHeader]) -> str | None:
    """The section headers, where present, must agree with the program headers: the
    program header table ends before the first section's contents (a linker puts it
    right after the ELF header; a larger ``e_phnum`` would read sections as program
    headers), and every section the program needs in memory lies in a loadable segment
    (an executable one for code)."""
    starts = []
    for k in range(e_shnum):
        sh_type, sh_flags, sh_addr, sh_offset, sh_size = struct.unpack_from("<IQQQQ", blob, e_shoff + k * 64 + 4)
        if sh_type == SHT_NULL or not sh_size:
            continue
        if sh_type != SHT_NOBITS:
            starts.append(sh_offset)
        if sh_flags & SHF_ALLOC and not (sh_type == SHT_NOBITS and sh_flags & SHF_TLS):  # (.tbss takes no address space)
            section = ProgramHeader(PT_LOAD, 0, sh_offset, sh_addr, sh_addr, 0 if sh_type == SHT_NOBITS else sh_size, sh_size, 0)
            home = next((load for load in loads if _covers(load, section)), None)
            if home is None:
                return f"section {k} (at {sh_addr:#x}) lies in no loadable segment"
            if sh_flags & SHF_EXECINSTR and not home.flags & PF_X:
                return f"section {k} holds code but its segment is not executable"
    if starts and table_end > min(starts):
        return "the program header table runs into the sections (bad e_phnum?)"
    return None


__all__ = ["elf_problem"]
