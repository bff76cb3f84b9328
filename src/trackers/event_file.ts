/**
 * TensorBoard's event file format: TFRecord framing (a little-endian uint64 length, its masked CRC-32C, the
 * data, the data's masked CRC-32C) around `tensorflow.Event` protobufs. The messages below are the subset of
 * TensorFlow's event.proto, summary.proto, tensor.proto and tensor_shape.proto that scalars and text need,
 * with their field numbers; protobufjs encodes them and @aws-crypto/crc32c sums them.
 */
import { crc32c } from '@aws-crypto/crc32c';
import * as protobuf from 'protobufjs';

const PROTO = `
syntax = "proto3";
package tensorflow;
message TensorShapeProto {}
message TensorProto { int32 dtype = 1; TensorShapeProto tensor_shape = 2; repeated bytes string_val = 8; }
message SummaryMetadata {
  message PluginData { string plugin_name = 1; bytes content = 2; }
  PluginData plugin_data = 1;
}
message Summary {
  message Value { string tag = 1; float simple_value = 2; TensorProto tensor = 8; SummaryMetadata metadata = 9; }
  repeated Value value = 1;
}
message Event {
  double wall_time = 1;
  int64 step = 2;
  oneof what { string file_version = 3; Summary summary = 5; }
}
`;

const Event = protobuf.parse(PROTO).root.lookupType('tensorflow.Event');

/** TensorFlow's DataType DT_STRING. */
const DT_STRING = 7;

/** The first event of every event file (TensorFlow's and PyTorch's writers write the same). */
export const FILE_VERSION = 'brain.Event:2';

/** One decoded event: its step, and its scalars (tag -> value) or text (tag -> string). */
export interface DecodedEvent {
  step: number;
  wallTime: number;
  fileVersion?: string;
  scalars: Record<string, number>;
  texts: Record<string, string>;
}

/** TFRecord's masked CRC-32C (a rotation plus a constant, so a CRC of CRCs does not look like one). */
function maskedCrc(data: Uint8Array): number {
  const crc = crc32c(data);
  return (((crc >>> 15) | (crc << 17)) + 0xa282ead8) >>> 0;
}

/** `data` framed as one TFRecord. */
function record(data: Uint8Array): Buffer {
  const head = Buffer.alloc(12);
  head.writeBigUInt64LE(BigInt(data.length), 0);
  head.writeUInt32LE(maskedCrc(head.subarray(0, 8)), 8);
  const tail = Buffer.alloc(4);
  tail.writeUInt32LE(maskedCrc(data), 0);
  return Buffer.concat([head, data, tail]);
}

/** The record of the file-version event that opens an event file. */
export function fileVersionRecord(wallTime: number): Buffer {
  return record(Event.encode(Event.create({ wallTime, step: 0, fileVersion: FILE_VERSION })).finish());
}

/** The record of one event holding every scalar of a step (one record, so a step is written whole or not at all). */
export function scalarsRecord(step: number, wallTime: number, scalars: Record<string, number>): Buffer {
  const value = Object.entries(scalars).map(([tag, simpleValue]) => ({ tag, simpleValue }));
  return record(Event.encode(Event.create({ wallTime, step, summary: { value } })).finish());
}

/** The record of a text summary (TensorBoard's text plugin: a string tensor of shape []; markdown). */
export function textRecord(step: number, wallTime: number, tag: string, text: string): Buffer {
  const value = [
    {
      tag,
      tensor: { dtype: DT_STRING, tensorShape: {}, stringVal: [Buffer.from(text, 'utf8')] },
      metadata: { pluginData: { pluginName: 'text', content: new Uint8Array(0) } },
    },
  ];
  return record(Event.encode(Event.create({ wallTime, step, summary: { value } })).finish());
}

/** What readRecords found: the events of the whole records, and the byte length they take. */
export interface ReadEvents {
  events: DecodedEvent[];
  /** Bytes of whole, intact records from the start; a writer killed mid-record leaves more after them. */
  intactBytes: number;
}

/**
 * Decodes the records of an event file up to the first one that is cut short or fails its CRC (the tail a
 * writer killed mid-write leaves); what follows it is not read.
 */
export function readRecords(bytes: Uint8Array): ReadEvents {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const events: DecodedEvent[] = [];
  let at = 0;
  while (at + 12 <= buf.length) {
    if (buf.readUInt32LE(at + 8) !== maskedCrc(buf.subarray(at, at + 8))) break;
    const length = Number(buf.readBigUInt64LE(at));
    const end = at + 12 + length + 4;
    if (end > buf.length) break;
    const data = buf.subarray(at + 12, at + 12 + length);
    if (buf.readUInt32LE(end - 4) !== maskedCrc(data)) break;
    events.push(decodeEvent(data));
    at = end;
  }
  return { events, intactBytes: at };
}

/** One Event message as DecodedEvent. */
function decodeEvent(data: Uint8Array): DecodedEvent {
  const e = Event.toObject(Event.decode(data), { longs: Number, bytes: Buffer }) as {
    wallTime?: number;
    step?: number;
    fileVersion?: string;
    summary?: { value?: Array<{ tag: string; simpleValue?: number; tensor?: { stringVal?: Buffer[] } }> };
  };
  const out: DecodedEvent = { step: e.step ?? 0, wallTime: e.wallTime ?? 0, scalars: {}, texts: {} };
  if (e.fileVersion) out.fileVersion = e.fileVersion;
  for (const v of e.summary?.value ?? []) {
    const text = v.tensor?.stringVal?.[0];
    if (text) out.texts[v.tag] = text.toString('utf8');
    else out.scalars[v.tag] = v.simpleValue ?? 0;
  }
  return out;
}
