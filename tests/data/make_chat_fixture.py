#!/usr/bin/env python3
"""Make tests/data/chat-templates.jsonl: chat prompts rendered by the models'
own chat templates, the way Hugging Face renders them, for grpo-cat --chat.

usage: make_chat_fixture.py SHARED_DATA [FORMAT=TEMPLATE ...] > tests/data/chat-templates.jsonl

SHARED_DATA is ../shared/data: the chat_template of
tokenizers/{qwen3,llama3}/tokenizer_config.json is rendered with jinja2 as
transformers does (an ImmutableSandboxedEnvironment with trim_blocks and
lstrip_blocks, add_generation_prompt=True, bos_token and eos_token from the
config), on the first GSM8K test questions and on hand-made conversations.
Needs only jinja2; the ids follow from the text by tokenize.t's checks.

FORMAT=TEMPLATE adds the formats whose templates ../shared lacks, each a
file holding the chat_template string of a model's tokenizer_config.json,
rendered with Llama 3's special tokens: llama3.1=FILE (Llama 3.1 or 3.3
Instruct's template) and llama3.2=FILE (Llama 3.2 Instruct's). Their
prompts are rendered both without and with a date_string, as the line
carries it; llama3.2's only with one, as without it the date is today's.

Then each tests/data/chat-templates/NAME.json (deepseek-r1, llama2, llama3,
llama3.2, mistral, qwen2.5, qwen2.5-math, smollm2, zephyr), a model's chat_template with its
bos_token and eos_token (llama3.2's as its FORMAT=TEMPLATE above, which it makes unneeded)
and where it was found, on the same conversations and on more that these
templates treat apart (empty contents, white space, roles that do not
alternate). Where a template raises (raise_exception, or an index past the messages), the line
holds "error" with the template's message instead of "text".
"""
import glob
import json
import os
import sys

from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise TemplateError(message)   # as transformers' own raise_exception


def render(cfg, msgs, **kw):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    return env.from_string(cfg["chat_template"]).render(
        messages=msgs, add_generation_prompt=True, bos_token=cfg.get("bos_token"),
        eos_token=cfg.get("eos_token"), **kw)


def main():
    data = sys.argv[1]
    qs = [json.loads(l)["question"] for l in open(f"{data}/gsm8k/test.jsonl", encoding="utf-8")][:16]
    convs = [[{"role": "user", "content": q}] for q in qs] + [
        [{"role": "system", "content": "You are a careful math tutor. Answer with a number."},
         {"role": "user", "content": qs[0]}],
        [{"role": "user", "content": "What is 2+2?"},
         {"role": "assistant", "content": "<think>\nTwo and two.\n</think>\n\n4"},
         {"role": "user", "content": "  And 3+3?\n"}],
        [{"role": "system", "content": "\n Be brief. \n"},
         {"role": "user", "content": "\u00c7a va? Gr\u00fc\u00dfe \u2014 \u00bd\u3000"},
         {"role": "assistant", "content": "Oui."},
         {"role": "user", "content": "\u4e2d\u6587\uff0c\u65e5\u672c\u8a9e \U0001f642"}],
        [{"role": "user", "content": "q"},
         {"role": "assistant", "content": "\n<think>\n\nreasoning\n</think>\n\n\nanswer"}],
        [{"role": "user", "content": "Write <|im_end|> and <|eot_id|> literally.\tTabs\r\nand CRLF."}],
        [{"role": "user", "content": "a"}, {"role": "system", "content": "a later system turn"}],
    ]
    # for the formats of tests/data/chat-templates only: what their templates treat apart
    extra = [
        [{"role": "user", "content": ""}],
        [{"role": "system", "content": ""}, {"role": "user", "content": ""}],
        [{"role": "system", "content": " \n"}, {"role": "user", "content": "\t hi \n"},
         {"role": "assistant", "content": " 4 \n"}, {"role": "user", "content": " \u00a0next\u3000"}],
        [{"role": "system", "content": "Sys."}, {"role": "user", "content": "u1"},
         {"role": "assistant", "content": "a1"}, {"role": "user", "content": "u2"},
         {"role": "assistant", "content": "a2"}, {"role": "user", "content": "u3"}],
        [{"role": "user", "content": "Write [INST], [/INST], <<SYS>>, </s>, <s> and <|user|> literally."}],
        [{"role": "system", "content": "only a system message"}],
        [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
        [{"role": "assistant", "content": "first"}, {"role": "user", "content": "u"}],
        [{"role": "system", "content": "s1"}, {"role": "system", "content": "s2"}, {"role": "user", "content": "u"}],
        [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
         {"role": "system", "content": "s again"}, {"role": "user", "content": "u2"}],
    ]
    # llama3.2 writes today's date unless given one: only with one, so that the lines stay
    dates = {"llama3.1": (None, "5 Mar 2025"), "llama3.2": ("5 Mar 2025",)}
    formats = [("qwen3", (None, False), None), ("llama3", (None,), None)]
    for arg in sys.argv[2:]:
        name, path = arg.split("=", 1)
        formats.append((name, dates[name], open(path, encoding="utf-8").read()))
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "chat-templates")
    for path in sorted(glob.glob(f"{here}/*.json")):
        name = os.path.basename(path)[:-5]
        formats.append((name, dates.get(name, (None,)), json.load(open(path, encoding="utf-8"))))
    for name, variants, template in formats:
        if isinstance(template, dict) and name in dates:   # a Llama 3.x template of tests/data/chat-templates
            cfg, key, cases = template, "date_string", convs
        elif isinstance(template, dict):   # tests/data/chat-templates/NAME.json carries its own tokens
            cfg, key, cases = template, None, convs + extra
        else:
            cfg = json.load(open(f"{data}/tokenizers/{name[:6]}/tokenizer_config.json", encoding="utf-8"))
            if template:
                cfg = dict(cfg, chat_template=template)
            key, cases = "date_string" if template else "enable_thinking", convs
        for msgs in cases:
            for v in variants:
                kw = {} if v is None else {key: v}
                line = dict({"messages": msgs}, **kw)
                try:
                    out = {"text": render(cfg, msgs, **kw)}
                except TemplateError as e:   # raise_exception, or messages[0] of no messages
                    out = {"error": str(e)}
                print(json.dumps(dict({"format": name, "input": line}, **out), ensure_ascii=False))


if __name__ == "__main__":
    main()
