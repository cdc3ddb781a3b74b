# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A request's generated output as its raw record keeps it: token ids and text, compressed, bounded by what was asked.

Private to the specdec.bench collection; standard library only (it runs on the benchmark host, and the report's
controller side unpacks with the same code).

pack(ids, text, asked) -> {"tokens": n, "sha256": <sha256 of the ids as JSON>, "z": <base64 of zlib(JSON)>}, where
the JSON is {"ids": [int, ...], "text": str} with compact separators. The ids are SGLang's `output_ids` of the
request's final stream chunk (the whole output: SGLang 0.5.23 re-sends it in every chunk without --stream-output) and
the text its `text`. The bounds of the harness hold: no more ids than max_new_tokens (`asked`), each an integer from 0
below 2**31, and no more text than MAX_TEXT_BYTES_PER_TOKEN bytes a token (BrokenResponse names what the server
claimed). `sha256` lets the report compare two outputs for token identity without unpacking them.

unpack(packed) -> (ids, text): the inverse, decompressing at most MAX_UNPACKED_BYTES (a record is data from a host:
a compressed bomb is refused, as a malformed one is, with ValueError).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import zlib

from .sglang_http import BrokenResponse

# The most text one token can carry: a real vocabulary's longest tokens are runs of spaces or code indentation, well
# under this; a server sending more per token than this is broken.
MAX_TEXT_BYTES_PER_TOKEN = 256
MAX_TOKEN_ID = 2 ** 31 - 1
# What unpack() decompresses at most: 64 MiB, far above a 32k-token output's ids and text.
MAX_UNPACKED_BYTES = 64 << 20
KEYS = ('tokens', 'sha256', 'z')


def _is_id(token):
    """A token id: an int (not a bool) from 0 to MAX_TOKEN_ID."""
    return isinstance(token, int) and not isinstance(token, bool) and 0 <= token <= MAX_TOKEN_ID


def ids_sha256(ids):
    """The sha256 of a list of token ids as compact JSON: equal for token-identical outputs."""
    return hashlib.sha256(json.dumps(list(ids), separators=(',', ':')).encode('ascii')).hexdigest()


def check(ids, text, asked=None):
    """Raise BrokenResponse unless ids is a list of token ids (ints 0..2**31-1), at most `asked` of them, and text a
    string (or None) of at most MAX_TEXT_BYTES_PER_TOKEN UTF-8 bytes per asked (else returned) token."""
    if not isinstance(ids, list) or not all(_is_id(token) for token in ids):
        raise BrokenResponse('the server sent output_ids %r, which is no list of token ids' % (ids[:20] if isinstance(ids, list) else ids,))
    if asked is not None and len(ids) > asked:
        raise BrokenResponse('the server sent %d output_ids, more than the %d asked for' % (len(ids), asked))
    if text is not None and not isinstance(text, str):
        raise BrokenResponse('the server sent text %r, which is no string' % (text,))
    most = MAX_TEXT_BYTES_PER_TOKEN * max(asked if asked is not None else len(ids), 1)
    if text and len(text.encode('utf-8', 'surrogatepass')) > most:
        raise BrokenResponse('the server sent %d bytes of text, more than %d bytes a token for %d tokens'
                             % (len(text.encode('utf-8', 'surrogatepass')), MAX_TEXT_BYTES_PER_TOKEN, most // MAX_TEXT_BYTES_PER_TOKEN))


def pack(ids, text, asked=None):
    """A request's output for its raw record (see the module docstring); BrokenResponse past the bounds."""
    check(ids, text, asked)
    data = json.dumps({'ids': ids, 'text': text or ''}, ensure_ascii=False, separators=(',', ':')).encode('utf-8', 'surrogatepass')
    return {'tokens': len(ids), 'sha256': ids_sha256(ids), 'z': base64.b64encode(zlib.compress(data, 6)).decode('ascii')}


def unpack(packed, max_bytes=MAX_UNPACKED_BYTES):
    """(ids, text) of a packed output; ValueError naming what is wrong (not a packed output, a bad encoding, more than
    max_bytes unpacked, ids that do not match its count or sha256)."""
    if not isinstance(packed, dict) or not isinstance(packed.get('z'), str):
        raise ValueError('output is %r; allowed: {"tokens", "sha256", "z"} as the harness packs it' % (type(packed).__name__,))
    try:
        compressed = base64.b64decode(packed['z'].encode('ascii'), validate=True)
        inflate = zlib.decompressobj()
        data = inflate.decompress(compressed, max_bytes)
        if inflate.unconsumed_tail:
            raise ValueError('output unpacks to more than %d bytes' % max_bytes)
        doc = json.loads(data.decode('utf-8'))
    except (binascii.Error, UnicodeError, zlib.error) as exc:
        raise ValueError('output is not base64 of zlib of JSON: %s' % exc)
    ids, text = (doc.get('ids'), doc.get('text')) if isinstance(doc, dict) else (None, None)
    if not isinstance(ids, list) or not isinstance(text, str) or not all(_is_id(token) for token in ids):
        raise ValueError('output holds no {"ids": [int, ...], "text": str}')
    if packed.get('tokens') != len(ids) or packed.get('sha256') != ids_sha256(ids):
        raise ValueError('output ids do not match its tokens and sha256')
    return ids, text
