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
"""
import json
import sys

from jinja2.sandbox import ImmutableSandboxedEnvironment


def render(cfg, msgs, **kw):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
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
    formats = [("qwen3", (None, False), None), ("llama3", (None,), None)]
    for arg in sys.argv[2:]:
        name, path = arg.split("=", 1)
        dates = ("5 Mar 2025",) if name == "llama3.2" else (None, "5 Mar 2025")
        formats.append((name, dates, open(path, encoding="utf-8").read()))
    for name, variants, template in formats:
        cfg = json.load(open(f"{data}/tokenizers/{name[:6]}/tokenizer_config.json", encoding="utf-8"))
        if template:
            cfg = dict(cfg, chat_template=template)
        key = "date_string" if template else "enable_thinking"
        for msgs in convs:
            for v in variants:
                kw = {} if v is None else {key: v}
                line = dict({"messages": msgs}, **kw)
                print(json.dumps({"format": name, "input": line, "text": render(cfg, msgs, **kw)},
                                 ensure_ascii=False))


if __name__ == "__main__":
    main()
