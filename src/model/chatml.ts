/**
 * The Qwen ChatML conventions starpo's prompts follow (SPEC.md §4, src/rollout/chat.ts): the special
 * tokens and, for HF tokenizer_config.json, the chat template rendering
 * "<|im_start|>{role}\n{content}<|im_end|>\n" per message and "<|im_start|>assistant\n" to prompt a reply.
 */

/** ChatML special tokens in the char tokenizer's id order (0: pad, 1, 2, 3: unknown character). */
export const CHATML_SPECIAL_TOKENS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>', '<unk>'] as const;

/** Padding token of Qwen models (HF tokenizer_config pad_token). */
export const PAD_TOKEN = '<|endoftext|>';

/** Tokens that end a response, in order (SPEC.md §4.3; HF generation_config eos_token_id). */
export const EOS_TOKENS = ['<|im_end|>', '<|endoftext|>'] as const;

/** Tokens a tokenizer must have for starpo's prompts: the ChatML markers and the pad token. */
export const REQUIRED_TOKENS = ['<|im_start|>', '<|im_end|>', '<|endoftext|>'] as const;

/**
 * Jinja chat template (HF tokenizer_config.json `chat_template`) equal to starpo's prompt format: no
 * default system message (Qwen2.5's template adds one; starpo's rollouts do not).
 */
export const CHATML_TEMPLATE =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
