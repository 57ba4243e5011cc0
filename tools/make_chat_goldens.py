#!/usr/bin/env python3
"""Golden outputs for the Jinja interpreter and the chat templates, from transformers' own chat templating.

Two sets, written under --out:
  conformance_golden.jsonl  one line per case of tests/data/jinja/conformance.jsonl: {"name", "output"} or
                            {"name", "error"} when transformers' environment raised (at load or render time).
  chat_templates.json       {name: {"template", "source", "special_tokens"}} for each tokenizer folder, the
                            template picked the way transformers 5.x picks it (chat_template.jinja first, then
                            tokenizer_config.json's "chat_template", a string or a list whose "default" is used).
  chat_goldens.jsonl        one line per template x conversation x add_generation_prompt:
                            {"template", "conversation", "set", "add_generation_prompt", "output" | "error"}.

Rendering goes through transformers.utils.chat_template_utils: _compile_jinja_template (the exact environment:
ImmutableSandboxedEnvironment, trim/lstrip blocks, loopcontrols, tojson, raise_exception, strftime_now,
{% generation %}) and render_jinja_template with the special tokens merged in the way apply_chat_template does
({**special_tokens_map, **kwargs}), after apply_chat_template's one precondition (an empty conversation raises
ValueError). AutoTokenizer is not used so that only tokenizer_config.json (and
chat_template.jinja) need to travel to the device; a tokenizer's special_tokens_map holds exactly the tokens its
config sets.

strftime_now reads datetime.now(); it is frozen at FROZEN_NOW so goldens do not depend on the day they were made.
The C++ side passes the same instant (ChatTemplateInputs::now_epoch_seconds = FROZEN_EPOCH, rendered with TZ=UTC).

Usage (on the device machine, which has transformers 5.x):
  python tools/make_chat_goldens.py --tokenizers DIR --out OUTDIR
--local-jinja (development only) builds an equivalent environment from jinja2 when transformers is absent.
"""

import argparse
import datetime as _dt
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FROZEN_NOW = _dt.datetime(2026, 1, 15, 12, 0, 0)
FROZEN_EPOCH = 1768478400  # FROZEN_NOW as UTC epoch seconds
TEMPLATES = ["llama3", "llama3_2", "qwen2_5", "qwen3", "mistral_nemo", "deepseek_v3", "gemma3"]
SPECIAL_TOKEN_KEYS = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"]


class FrozenDatetime(_dt.datetime):
    @classmethod
    def now(cls, tz=None):
        return FROZEN_NOW


def load_renderer(local_jinja):
    """Returns (compile(template) -> jinja Template, render(template, messages, tools, agp, kwargs) -> str)."""
    if not local_jinja:
        import transformers
        from transformers.utils import chat_template_utils as ctu

        ctu.datetime = FrozenDatetime
        compile_fn = ctu._compile_jinja_template

        import inspect

        import jinja2

        params = inspect.signature(ctu.render_jinja_template).parameters
        for required in ("conversations", "tools", "chat_template", "add_generation_prompt"):
            assert required in params, f"render_jinja_template has no parameter {required}: {list(params)}"

        def render(template, messages, tools, add_generation_prompt, kwargs):
            if len(messages) == 0:  # apply_chat_template's own precondition (tokenization_utils_base.py)
                raise ValueError("Cannot apply chat template to an empty conversation. Provide at least one message.")
            rendered, _ = ctu.render_jinja_template(
                conversations=[messages], tools=tools, documents=None, chat_template=template,
                add_generation_prompt=add_generation_prompt, **kwargs)
            return rendered[0]

        print(f"transformers {transformers.__version__}, jinja2 {jinja2.__version__}, "
              f"render_jinja_template{inspect.signature(ctu.render_jinja_template)}", file=sys.stderr)
        return compile_fn, render

    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def compile_fn(template):
        def raise_exception(message):
            raise jinja2.exceptions.TemplateError(message)

        def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
            return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
        env.filters["tojson"] = tojson
        env.globals["raise_exception"] = raise_exception
        env.globals["strftime_now"] = lambda fmt: FROZEN_NOW.strftime(fmt)
        return env.from_string(template)

    def render(template, messages, tools, add_generation_prompt, kwargs):
        if len(messages) == 0:
            raise ValueError("Cannot apply chat template to an empty conversation. Provide at least one message.")
        return compile_fn(template).render(messages=messages, tools=tools, documents=None,
                                           add_generation_prompt=add_generation_prompt, **kwargs)

    print(f"local jinja2 {jinja2.__version__} (development goldens only)", file=sys.stderr)
    return compile_fn, render


def describe(e):
    return f"{type(e).__name__}: {e}"


def conformance(compile_fn, out_dir):
    path = os.path.join(ROOT, "tests", "data", "jinja", "conformance.jsonl")
    n_ok = n_err = 0
    with open(path, encoding="utf-8") as f, \
         open(os.path.join(out_dir, "conformance_golden.jsonl"), "w", encoding="utf-8") as out:
        for line in f:
            if not line.strip():
                continue
            case = json.loads(line)
            record = {"name": case["name"]}
            try:
                record["output"] = compile_fn(case["template"]).render(**case.get("context", {}))
                n_ok += 1
            except Exception as e:  # noqa: BLE001 - any failure is the golden
                record["error"] = describe(e)
                n_err += 1
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(f"conformance: {n_ok} rendered, {n_err} raised", file=sys.stderr)


def token_content(value):
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    return None


def pick_template(folder):
    jinja_path = os.path.join(folder, "chat_template.jinja")
    with open(os.path.join(folder, "tokenizer_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    special = {}
    for key in SPECIAL_TOKEN_KEYS:
        content = token_content(config.get(key))
        if content is not None:
            special[key] = content
    if os.path.exists(jinja_path):
        with open(jinja_path, encoding="utf-8") as f:
            return f.read(), "chat_template.jinja", special
    template = config.get("chat_template")
    if isinstance(template, list):
        template = {t["name"]: t["template"] for t in template}.get("default")
    return template, "tokenizer_config.json", special


def chat(render, tokenizers_dir, out_dir):
    templates = {}
    for name in TEMPLATES:
        template, source, special = pick_template(os.path.join(tokenizers_dir, name))
        templates[name] = {"template": template, "source": source, "special_tokens": special}
    with open(os.path.join(out_dir, "chat_templates.json"), "w", encoding="utf-8") as f:
        json.dump(templates, f, ensure_ascii=False, indent=1)
    n_ok = n_err = 0
    with open(os.path.join(out_dir, "chat_goldens.jsonl"), "w", encoding="utf-8") as out:
        for set_name in ["conversations", "conversations_heldout"]:
            with open(os.path.join(ROOT, "tests", "data", "chat", set_name + ".json"), encoding="utf-8") as f:
                conversations = json.load(f)
            for name in TEMPLATES:
                info = templates[name]
                for conv in conversations:
                    if "templates" in conv and name not in conv["templates"]:
                        continue
                    for agp in (False, True):
                        record = {"template": name, "conversation": conv["name"], "set": set_name,
                                  "add_generation_prompt": agp}
                        kwargs = dict(info["special_tokens"])
                        kwargs.update(conv.get("kwargs", {}))
                        try:
                            record["output"] = render(info["template"], conv["messages"], conv.get("tools"), agp,
                                                      kwargs)
                            n_ok += 1
                        except Exception as e:  # noqa: BLE001
                            record["error"] = describe(e)
                            n_err += 1
                        out.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(f"chat: {n_ok} rendered, {n_err} raised", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokenizers", default=os.path.join(ROOT, ".cache", "tokenizers"))
    parser.add_argument("--out", required=True)
    parser.add_argument("--local-jinja", action="store_true")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    compile_fn, render = load_renderer(args.local_jinja)
    conformance(compile_fn, args.out)
    chat(render, args.tokenizers, args.out)


if __name__ == "__main__":
    main()
