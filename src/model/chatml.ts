/**
 * The Qwen ChatML conventions of the `tiny` preset's char tokenizer: its special tokens, its stop tokens
 * and its chat template, "<|im_start|>{role}\n{content}<|im_end|>\n" per message and
 * "<|im_start|>assistant\n" to prompt a reply. A `pretrain: DIR` model brings its own template and stop
 * tokens (chat_template.ts); prompts are rendered turn by turn in src/rollout/chat.ts.
 */

/** ChatML special tokens in the char tokenizer's id order (0: pad, 1, 2, 3: unknown character). */
export const CHATML_SPECIAL_TOKENS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>', '<unk>'] as const;

/** Padding token of Qwen models (HF tokenizer_config pad_token). */
export const PAD_TOKEN = '<|endoftext|>';

/** Tokens that end a response of the tiny preset, in order (SPEC.md §4.3). */
export const EOS_TOKENS = ['<|im_end|>', '<|endoftext|>'] as const;

/** Tokens a tokenizer must have for starpo's prompts: the ChatML markers and the pad token. */
export const REQUIRED_TOKENS = ['<|im_start|>', '<|im_end|>', '<|endoftext|>'] as const;

/**
 * The tiny preset's Jinja chat template: ChatML without a default system message (Qwen2.5's adds one),
 * so its prompts are what they were before models brought their own templates.
 */
export const CHATML_TEMPLATE =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
