"""tools/sass/sass_hotpath.py on a hand-written nvdisasm listing: the loop around the wgmma is found,
the masked block (>= 32 FSEL) is avoided, an optional block behind a branch counts as skipped."""

import importlib.util
import os

_SPEC = importlib.util.spec_from_file_location(
    "sass_hotpath", os.path.join(os.path.dirname(__file__), "..", "tools", "sass", "sass_hotpath.py"))
hp = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(hp)


class Listing:
    """An nvdisasm listing written line by line: ins(text) adds an instruction, label(name) a label."""

    def __init__(self, name):
        self.lines, self.addr = [f".text.{name}:"], 0

    def ins(self, text):
        self.lines.append(f"        /*{self.addr:04x}*/                   {text} ;")
        self.addr += 16

    def label(self, name):
        self.lines.append(f"{name}:")

    def text(self):
        return "\n".join(self.lines)


def listing(masked_fsel=32):
    lst = Listing("kern")
    ins, lines = lst.ins, lst.lines

    ins("MOV R1, c[0x0][0x28]")          # prologue, outside the loop
    lines.append(".L_x_1:")                # loop header
    ins("QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR24], RZ, !UPT")
    ins("WARPGROUP.DEPBAR.LE gsb0, 0x0")
    ins("@P0 BRA `(.L_x_2)")              # to the masked block
    for _ in range(3):
        ins("FMNMX R4, R4, R5, !PT")      # plain block: 3 instructions
    ins("BRA `(.L_x_3)")
    lines.append(".L_x_2:")
    for _ in range(masked_fsel):
        ins("FSEL R5, R5, -INF , !P1")
    lines.append(".L_x_3:")
    ins("@P2 BRA `(.L_x_4)")              # optional rescale, skipped on the shortest path
    for _ in range(10):
        ins("FMUL R6, R6, R7")
    lines.append(".L_x_4:")
    ins("MUFU.EX2 R8, R8")
    ins("@P3 BRA `(.L_x_1)")              # back edge
    ins("EXIT")
    return lst.text()


def test_hot_path_counts_the_plain_block_and_skips_optional_work():
    ins, labels = hp.parse(listing())["kern"]
    n, total, ops, header = hp.hot_path(ins, labels)
    # header 3 + plain 4 (3 FMNMX, BRA) + optional-branch 1 + MUFU 1 + back edge 1
    assert n == 10, n
    assert ops["FMNMX"] == 3 and ops["FSEL"] == 0 and ops["FMUL"] == 0
    assert header == 16 and total == 3 + 4 + 32 + 1 + 10 + 1 + 1  # every instruction of the loop


def test_few_fsel_is_not_a_rare_block():
    # a block with fewer than 32 FSEL is an ordinary block: the shorter of the two paths wins
    ins, labels = hp.parse(listing(masked_fsel=2))["kern"]
    n, _, ops, _ = hp.hot_path(ins, labels)
    assert n == 8 and ops["FSEL"] == 2, (n, ops)


def test_no_loop_around_a_wgmma():
    text = ".text.k:\n        /*0000*/                   MOV R1, R2 ;\n        /*0010*/                   EXIT ;"
    ins, labels = hp.parse(text)["k"]
    assert hp.hot_path(ins, labels) is None


def build(name, items):
    """(instructions, labels) of a listing given as a list of instruction texts and labels."""
    lst = Listing(name)
    for it in items:
        if it.startswith(".L_x_"):
            lst.label(it)
        else:
            lst.ins(it)
    return hp.parse(lst.text())[name]


def test_innermost_picks_the_k_loop_of_a_tile_loop():
    ins, labels = build("g", [
        ".L_x_1", "IMAD R2, R2, R3, RZ",                      # tile loop
        ".L_x_2", "QGMMA.64x192x32.F32.E4M3.E4M3 R24, gdesc[UR20], RZ, !UPT",   # K loop
        "FFMA R100, R24, R5, R100", "@P1 BRA `(.L_x_2)",
    ] + ["STS [R4], R100"] * 5 + ["@P2 BRA `(.L_x_1)", "EXIT"])   # epilogue, tile loop's back edge
    outer = hp.hot_path(ins, labels)
    inner = hp.hot_path(ins, labels, innermost=True)
    assert outer[1] == 1 + 3 + 5 + 1 and inner[1] == 3 and inner[0] == 3, (outer, inner)


def test_drain_counts_from_the_wait_round_the_back_edge_to_the_next_issue():
    ins, labels = build("d", [
        ".L_x_1",
        "UIADD3 UR4, UR4, 0x2, URZ",                            # descriptor arithmetic before the issue
        "QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR4], RZ, !UPT",
        "LDS R5, [R4]",                                          # under the group: not on the drain
        "WARPGROUP.DEPBAR.LE gsb0, 0x0",
    ] + ["FFMA R100, R24, R5, R100"] * 4 + ["@P1 BRA `(.L_x_1)", "EXIT"])   # promotion, back edge
    # DEPBAR -> 4 FFMA, the back edge, the descriptor add -> the QGMMA
    assert hp.drain(ins, labels) == 1 + 4 + 1 + 1
