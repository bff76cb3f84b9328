/** A GGUF file starpo cannot read; the message names the file and, where one is at fault, the key or tensor. */
export class GgufError extends Error {
  override name = 'GgufError';
}
