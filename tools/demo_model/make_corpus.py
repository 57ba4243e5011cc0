#!/usr/bin/env python3
"""Builds the demo model's corpus from public-domain texts installed by make_corpus.sh.

Sources (all public domain; see each package's /usr/share/doc/<pkg>/copyright):
  sword-text-kjv  King James Version (engKJV2006eb), verse by verse
  sword-text-web  World English Bible with Deuterocanon (engWEB2015eb), verse by verse
  sword-comm-mhcc Matthew Henry's Concise Commentary, one record per commented passage
  sword-comm-tdavid C. H. Spurgeon, The Treasury of David, paragraphs of at most ~2000 characters
  dict-devil      Ambrose Bierce, The Devil's Dictionary, one record per headword

Output (in OUT_DIR): train.jsonl.xz and heldout.jsonl.xz, one JSON record per line:
  {"src": "kjv"|"web"|"mhcc"|"tdavid"|"devil", "ref": "Genesis 1:1" | "Genesis" | "ABASEMENT", "text": "..."}
and heldout.txt: the held-out records as plain text, in the training text's document format, for perplexity.
The split is by Bible chapter (the same chapters for both translations and the commentary, so no
translation of a held-out verse is seen in training) and by every 25th dictionary headword.
Plain python3, standard library only.
"""
import base64
import gzip
import hashlib
import json
import lzma
import os
import re
import subprocess
import sys

# Book names: "Genesis", "I Samuel", "Song of Solomon", "Esther (Greek)", "Revelation of John".
VERSE_HEADER = re.compile(r"^\s*((?:I{1,3} |IV )?[A-Z][a-z]+(?: [A-Za-z()]+){0,3}) (\d+):(\d+): ?(.*)$")
TAG = re.compile(r"<[^>]*>")
HELD_OUT_ONE_IN = 25


def diatheke(module, key):
    out = subprocess.run(["diatheke", "-b", module, "-f", "plain", "-k", key], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, check=True).stdout.decode("utf-8", "replace")
    return out


def clean(text):
    text = TAG.sub(" ", text)
    text = text.replace("\u00a0", " ")
    return re.sub(r"\s+", " ", text).strip()


def held_out_chapter(book, chapter):
    digest = hashlib.sha1(f"{book} {chapter}".encode()).digest()
    return digest[0] % HELD_OUT_ONE_IN == 0


def bible_records(module, src):
    """One record per verse: (book, chapter, verse, text). Continuation lines join the verse above."""
    lines = diatheke(module, "Gen 1:1-Rev 22:21").splitlines()
    # The plain renderer repeats some psalm titles after thousands of unrelated verses; a continuation
    # line seen more than a few times is such an artefact, not scripture.
    counts = {}
    for line in lines:
        if not VERSE_HEADER.match(line):
            counts[line.strip()] = counts.get(line.strip(), 0) + 1
    records = []
    for line in lines:
        m = VERSE_HEADER.match(line)
        if line.startswith("(" + module):
            continue
        if m:
            book, chapter, verse, text = m.group(1).strip(), int(m.group(2)), int(m.group(3)), m.group(4)
            records.append([book, chapter, verse, text])
        elif records and counts[line.strip()] <= 5:
            records[-1][3] += " " + line
    out = []
    for book, chapter, verse, text in records:
        text = clean(text)
        if text:
            out.append({"src": src, "ref": f"{book} {chapter}:{verse}", "book": book, "chapter": chapter,
                        "text": text})
    return out


def mhcc_records():
    """Matthew Henry: the module repeats a passage's note for every verse it covers (and its index is
    partly misaligned), so notes are cut at their '* Verses a-b *' markers and deduplicated."""
    out, seen = [], set()
    current_book, current_chapter = None, None
    for line in diatheke("MHCC", "Gen 1:1-Rev 22:21").splitlines():
        m = VERSE_HEADER.match(line)
        if m:
            current_book, current_chapter = m.group(1).strip(), int(m.group(2))
            line = m.group(4)
        if "Chapter Outline" in line or current_book is None:
            continue
        for part in re.split(r"\*\s*Verses? [\d, -]+\s*\*", line):
            text = clean(part.replace("*", " "))
            if len(text) < 80 or re.match(r"^[\w ,;'.-]*\(\d", text):
                continue
            key = hashlib.sha1(text.encode()).hexdigest()
            if key in seen:
                continue
            seen.add(key)
            out.append({"src": "mhcc", "ref": current_book, "book": current_book, "chapter": current_chapter,
                        "text": text})
    return out


def tdavid_records():
    """Spurgeon: the module gives a whole psalm's notes at every verse (and some keys fail to read), so
    each psalm's text is taken once and cut into paragraphs of at most ~2000 characters."""
    text = diatheke("TDavid", "Ps 1:1-Ps 150:6")
    parts = re.split(r"(?m)^\s*Psalms (\d+):\d+: ", text)
    out, seen = [], set()
    for i in range(1, len(parts), 2):
        body = parts[i + 1].strip()
        if not body or body in seen:
            continue
        seen.add(body)
        psalm = int(parts[i])
        chunk = ""
        for paragraph in re.split(r" {3,}|\n", body):
            paragraph = clean(paragraph.replace("*", " "))
            if not paragraph:
                continue
            if chunk and len(chunk) + len(paragraph) > 2000:
                out.append({"src": "tdavid", "ref": f"Psalm {psalm}", "book": "Psalms", "chapter": psalm,
                            "text": chunk})
                chunk = ""
            chunk = f"{chunk}\n{paragraph}" if chunk else paragraph
        if chunk:
            out.append({"src": "tdavid", "ref": f"Psalm {psalm}", "book": "Psalms", "chapter": psalm, "text": chunk})
    return out


def b64_number(s):
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    value = 0
    for ch in s:
        value = value * 64 + alphabet.index(ch)
    return value


def devil_records():
    data = gzip.open("/usr/share/dictd/devil.dict.dz").read()
    out = []
    with open("/usr/share/dictd/devil.index", encoding="utf-8") as f:
        for line in f:
            word, offset, length = line.rstrip("\n").split("\t")
            if word.startswith("00"):
                continue
            body = data[b64_number(offset):b64_number(offset) + b64_number(length)].decode("utf-8", "replace")
            # Keep the layout of verse quotations; collapse the hard-wrapped prose lines.
            paragraphs = [re.sub(r"\s+", " ", p).strip() for p in re.split(r"\n\s*\n", body)]
            text = "\n\n".join(p for p in paragraphs if p)
            if text:
                out.append({"src": "devil", "ref": word.upper(), "text": text})
    return out


def as_document_text(records):
    """The plain-text form used for training and perplexity: a verse is 'Book C:V text' on its own line."""
    lines = []
    for r in records:
        if r["src"] in ("kjv", "web"):
            lines.append(f"{r['ref']} {r['text']}")
        else:
            lines.append(r["text"])
    return "\n".join(lines) + "\n"


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else ".cache/demo_corpus"
    os.makedirs(out_dir, exist_ok=True)
    train, held = [], []
    for src, records in (("kjv", bible_records("engKJV2006eb", "kjv")), ("web", bible_records("engWEB2015eb", "web")),
                         ("mhcc", mhcc_records()), ("tdavid", tdavid_records()),
                         ("devil", devil_records())):
        n_held = 0
        for i, r in enumerate(records):
            if src == "devil":
                is_held = i % HELD_OUT_ONE_IN == HELD_OUT_ONE_IN // 2
            else:
                is_held = held_out_chapter(r["book"], r["chapter"])
            (held if is_held else train).append(r)
            n_held += is_held
        chars = sum(len(r["text"]) for r in records)
        print(f"{src}: {len(records)} records, {chars} chars, {n_held} held out")
    for name, records in (("train", train), ("heldout", held)):
        with lzma.open(os.path.join(out_dir, f"{name}.jsonl.xz"), "wt", encoding="utf-8", preset=6) as f:
            for r in records:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    held_text = "".join(as_document_text([r for r in held if r["src"] == s])
                        for s in ("kjv", "web", "mhcc", "tdavid", "devil"))
    with open(os.path.join(out_dir, "heldout.txt"), "w", encoding="utf-8") as f:
        f.write(held_text)
    print(f"train {len(train)} records, held out {len(held)} records ({len(held_text)} chars) -> {out_dir}")


if __name__ == "__main__":
    main()
