"""Tokenizer test corpus: hand-written edge cases plus seeded random strings
(multilingual text, emoji, combining marks, digits, whitespace, code, special
tokens, very long words, random code points). Used by test_tokenizer_hf.py."""
import random
import unicodedata

SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|begin_of_text|>", "<|end_of_text|>",
            "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>", "<think>", "</think>",
            "<tool_call>", "</tool_call>", "<|reserved_special_token_5|>", "<|im_start", "im_end|>", "<|"]

HAND = [
    "", " ", "  ", "\t", "\n", "\r\n", "\n\n\n", " \n ", "Hello world", " Hello world ", "hello   world",
    "Hello, world! How's it going?", "I'M HERE, YOU'LL SEE, WE'VE DONE IT, SHE'S, HE'D, THEY'RE, IT'S",
    "it's 'S 'll 'LL 'Ll 've 'VE 'Ve 'm 'M 'd 'D 're 'RE 't 'T", "don't won't can't shan't y'all",
    "'ſ 'K 'ſt", "''s '''", "The year 2024 had 366 days; 1234567890123 is long.", "3.14159 -42 +7 1e10 0x1F",
    "1234567890" * 20, "١٢٣٤٥٦٧٨٩٠ ۱۲۳ ๑๒๓ १२३ ½ ¾ ² ³ Ⅻ ⑳",
    "你好，世界！今天天气很好。", "日本語のテキストです。カタカナ、ひらがな、漢字。", "한국어 텍스트입니다. 안녕하세요!",
    "مرحبا بالعالم، كيف حالك؟", "नमस्ते दुनिया, आप कैसे हैं?", "Привет, мир! Как дела?", "สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่าง",
    "Γειά σου Κόσμε", "שלום עולם", "Xin chào thế giới", "Ελληνικά και English mixed 中文",
    "👋🌍 😀😃😄", "👨‍👩‍👧‍👦 family", "👍🏻👍🏼👍🏽👍🏾👍🏿", "🏳️‍🌈 🏴‍☠️ 🇺🇸🇯🇵", "❤️ ☺️ ✌🏽", "🧑🏽‍💻 coding",
    "e\u0301 \u00e9 a\u0308 \u00e4 n\u0303", "\u1e9b\u0323 Å Å Å", "ﬁ ﬂ ＡＢＣ ｶﾀｶﾅ", "\u0041\u030a\u0301",
    "tab\tseparated\tvalues\t", "trailing spaces   ", "   leading spaces", "line1\r\nline2\r\n\r\nline4",
    "mixed \t \n \r\n whitespace \u00a0 nbsp \u3000 ideographic \u2003 em", "\u180e mongolian \u200b zwsp \ufeff bom",
    "\u2028 ls \u2029 ps \u0085 nel \x0b vt \x0c ff", "a\x00b nul", "\x01\x02\x1f\x7f ctrl",
    "def foo(x):\n    return x ** 2  # square\n", "int main(void) { printf(\"%d\\n\", 42); return 0; }",
    "for (let i = 0; i < n; i++) {\n\tconsole.log(`${i}`);\n}", "<div class=\"a\">&amp; &lt;tag&gt;</div>",
    "SELECT * FROM users WHERE id = 1;", "path/to/file.txt C:\\Windows\\System32 https://example.com/a?b=c&d=e",
    "{\"key\": [1, 2, 3], \"nested\": {\"a\": null}}", "    indented\n        more\n\ttab",
    "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n", "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
    "text<|endoftext|>more", "<|endoftext|><|endoftext|>", "<|im_start|><|im_end|>", "<|im_start", "<|im_start|",
    "<think>\nreasoning\n</think>\n\nanswer", "<tool_call>{\"name\": \"f\"}</tool_call>", " <|eot_id|> ",
    "a<|reserved_special_token_0|>b", "<<|im_start|>>", "<|<|im_end|>|>",
    "!!!???...,,,;;;", "----====____", "......", "...\n\n...", "¿Qué? ¡Sí!", "«quotes» “curly” ‘single’",
    "\u0301\u07fd \u0345\u1df6 a\u0301\u0345", "\U00013e8e'S \U0001404fa \U00011935\U00011930 \U00031350\U0002ebf0",
    "\U00016d70\U0001d2c0 123 \u32ff \U0001fbf1", "naïve café résumé façade coöperate", "ÀÉÎÕÜ àéîõü", "straße STRASSE ß ẞ", "İstanbul ıi", "ǅ ǈ ǋ",
]


def _rand_text(rng, alphabet, lo, hi):
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(lo, hi)))


def _rand_cp(rng):
    """A random Unicode scalar value (no surrogates), biased to interesting planes."""
    r = rng.random()
    if r < 0.3:
        cp = rng.randint(0x20, 0x7FF)
    elif r < 0.6:
        cp = rng.randint(0x800, 0xFFFF)
    elif r < 0.75:
        cp = rng.randint(0xE000, 0xF8FF)  # private use
    elif r < 0.9:
        cp = rng.randint(0x10000, 0x2FFFF)
    else:
        cp = rng.choice([rng.randint(0xF0000, 0x10FFFF), rng.randint(0x30000, 0xEFFFF)])
    if 0xD800 <= cp <= 0xDFFF:
        cp = 0xFFFD
    return chr(cp)


def build(seed=1234):
    rng = random.Random(seed)
    out = list(HAND)
    words = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "Hello", "WORLD", "it's", "I'll",
             "你好", "世界", "東京", "한국", "привет", "مرحبا", "नमस्ते", "ไทย", "😀", "👨‍👩‍👧", "123", "4567",
             "3.5", "x_y", "fooBar", "  ", "\t", "\n", "\r\n", "!", "?", "...", "'s", "'VE", "'ll", "e\u0301",
             "<|im_start|>", "<|eot_id|>", "<|endoftext|>", "<|begin_of_text|>", "don't", "Ünïcödé", "Ωmega"]
    seps = [" ", "", "  ", "\n", "\t", ", ", " \n", "\r\n"]
    for _ in range(350):  # random sentences from words
        out.append("".join(rng.choice(words) + rng.choice(seps) for _ in range(rng.randint(1, 25))))
    ascii_chars = [chr(c) for c in range(32, 127)] + ["\n", "\t", " ", " ", " "]
    for _ in range(150):
        out.append(_rand_text(rng, ascii_chars, 1, 80))
    scripts = ["".join(chr(c) for c in range(a, b)) for a, b in
               [(0x4E00, 0x4F00), (0x3040, 0x30FF), (0xAC00, 0xAD00), (0x0600, 0x06FF), (0x0900, 0x097F),
                (0x0400, 0x04FF), (0x0E00, 0x0E7F), (0x0370, 0x03FF), (0x0300, 0x036F), (0x1F300, 0x1F64F)]]
    for _ in range(150):
        alpha = rng.choice(scripts) + "  \n0123456789.,'"
        out.append(_rand_text(rng, alpha, 1, 60))
    for _ in range(120):  # random code points incl. private use / unassigned
        out.append("".join(_rand_cp(rng) for _ in range(rng.randint(1, 30))))
    for _ in range(60):  # NFC / NFD / NFKC variants
        s = rng.choice(HAND[20:70]) + " " + _rand_text(rng, "àéîõüÅñçǅﬁ①ｶ가각", 1, 20)
        out.append(unicodedata.normalize(rng.choice(["NFC", "NFD", "NFKC", "NFKD"]), s))
    for _ in range(60):  # digit runs and whitespace runs
        out.append(_rand_text(rng, "0123456789", 1, 40) + rng.choice(["", " ", "x", "\n"]) +
                   _rand_text(rng, " \t\n\r\u00a0\u3000", 0, 12) + rng.choice(["", "a", "1", "!"]))
    for _ in range(80):  # special tokens embedded in text
        parts = [rng.choice(SPECIALS + words + [" ", "x", "\n"]) for _ in range(rng.randint(1, 12))]
        out.append("".join(parts))
    for _ in range(40):  # contractions with various cases
        c = "".join(rng.choice([ch.lower(), ch.upper()]) for ch in rng.choice(["'s", "'t", "'re", "'ve", "'m", "'ll", "'d"]))
        out.append(rng.choice(["it", "WE", "they", "x", " ", "", "'"]) + c + rng.choice(["", " ", "x", "s", "\n"]))
    # very long words and long texts
    out.append("a" * 6000)
    out.append("ab" * 3000 + " " + "xyz" * 2000)
    out.append("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(10000)))
    out.append("中" * 5000)
    out.append("😀" * 2000)
    out.append("1" * 5001)
    out.append(" " * 5000 + "x")
    out.append("\n" * 3000)
    out.append("!@#$%^&*()" * 600)
    out.append(" ".join(rng.choice(words) for _ in range(3000)))
    return out


# ---------------------------------------------------------------------------
# Generator for src/tok/tok_unidata.c:
#   python3 tests/py/tok_corpus.py --gen-unidata > src/tok/tok_unidata.c
# HF `tokenizers` runs its Split regexes through Oniguruma (newer Unicode
# tables than PCRE2 10.42's Unicode 14) and normalizes with
# unicode-normalization-alignments (Unicode 9 tables, older than utf8proc's).
# We probe HF itself for what it considers \p{L} / \p{N} and for the code
# points its normalizer does not know, and emit the differences as data.

def _ranges(xs):
    r = []
    for x in sorted(xs):
        if r and r[-1][1] == x - 1:
            r[-1][1] = x
        else:
            r.append([x, x])
    return r


def _hf_class(neg_pattern):
    from tokenizers import Regex, pre_tokenizers
    sp = pre_tokenizers.Split(pattern=Regex(neg_pattern), behavior="removed")
    cps = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    out = set()
    for i in range(0, len(cps), 50000):
        for piece, _ in sp.pre_tokenize_str("".join(map(chr, cps[i:i + 50000]))):
            out.update(map(ord, piece))
    return out


def _utf8proc_nontrivial():
    """{cp: (ccc, NFD, NFKD)} for code points utf8proc gives a combining class
    or a decomposition."""
    import ctypes
    import ctypes.util
    up = ctypes.CDLL(ctypes.util.find_library("utf8proc") or "libutf8proc.so.2")
    libc = ctypes.CDLL(None)
    up.utf8proc_get_property.restype = ctypes.POINTER(ctypes.c_int16 * 2)
    up.utf8proc_get_property.argtypes = [ctypes.c_int32]
    for f in (up.utf8proc_NFD, up.utf8proc_NFKD):
        f.restype = ctypes.c_void_p
        f.argtypes = [ctypes.c_char_p]
    libc.free.argtypes = [ctypes.c_void_p]

    def call(f, x):
        p = f(x.encode())
        d = ctypes.string_at(p).decode()
        libc.free(p)
        return d

    res = {}
    for cp in range(1, 0x110000):  # (NUL cannot pass through a C string)
        if 0xD800 <= cp < 0xE000:
            continue
        ccc = up.utf8proc_get_property(cp).contents[1]
        kd = call(up.utf8proc_NFKD, chr(cp))
        if ccc or kd != chr(cp):
            res[cp] = (ccc, call(up.utf8proc_NFD, chr(cp)), kd)
    return res


def gen_unidata():
    from tokenizers import normalizers
    L = _hf_class(r"\P{L}")
    N = _hf_class(r"\P{N}")
    D = _hf_class(r"\D")
    # PCRE2 10.42 and Python 3.11 unicodedata share Unicode 14.0
    assert unicodedata.unidata_version == "14.0.0"
    pl = {c for c in range(0x110000) if unicodedata.category(chr(c))[0] == "L"}
    pn = {c for c in range(0x110000) if unicodedata.category(chr(c))[0] == "N"}
    pd = {c for c in range(0x110000) if unicodedata.category(chr(c)) == "Nd"}
    assert not (pl - L) and not (pn - N) and not (pd - D), "HF dropped letters/numbers: cannot express as additions"
    nfd, nfkd, nfc = normalizers.NFD(), normalizers.NFKD(), normalizers.NFC()
    unknown = set()
    for cp, (ccc, d, kd) in _utf8proc_nontrivial().items():
        x = chr(cp)
        if kd != x and nfkd.normalize_str(x) != kd:
            unknown.add(cp)  # HF does not know its decomposition
            if d != x and nfc.normalize_str(d) == d:  # nor the composition: keep its parts apart
                unknown.update(ord(c) for c in d)
        elif ccc and d == x:
            if ccc < 240 and nfd.normalize_str("\u0345" + x) != x + "\u0345":
                unknown.add(cp)  # HF sees no combining class
            if ccc == 240 and nfd.normalize_str(x + "\u0301") != "\u0301" + x:
                unknown.add(cp)
    # the parts of compositions HF does not know must not be composed either
    print("/* GENERATED by tests/py/tok_corpus.py --gen-unidata: do not edit.")
    print(" * What HF tokenizers' engines see differently from PCRE2 10.42 / utf8proc:")
    print(" * extra \\p{L} / \\p{N} / \\d members (Oniguruma has newer Unicode tables), and")
    print(" * code points HF's normalizer does not know (it treats them as inert). */")
    print('#include "tok/tok_impl.h"\n')
    for name, extra in (("L", L - pl), ("N", N - pn), ("Nd", D - pd)):
        items = ["\\\\x{%X}" % a if a == b else "\\\\x{%X}-\\\\x{%X}" % (a, b) for a, b in _ranges(extra)]
        print("const char tok_unidata_%s_extra[] =" % name)
        for i in range(0, len(items), 4):
            print('    "%s"' % "".join(items[i:i + 4]))
        print("    ;")
    un = sorted(unknown)
    print("\nconst uint32_t tok_unidata_norm_inert[] = {")
    for i in range(0, len(un), 8):
        print("    " + ", ".join("0x%X" % c for c in un[i:i + 8]) + ",")
    print("};")
    print("const int tok_unidata_norm_inert_n = %d;" % len(un))


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["--gen-unidata"]:
        gen_unidata()
    else:
        print(f"{len(build())} strings (use --gen-unidata to regenerate src/tok/tok_unidata.c)")
