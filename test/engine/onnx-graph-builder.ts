/**
 * Writes small ONNX graphs in the test run, so the ONNX drivers can be exercised against
 * ONNX Runtime without the real exports (which cannot be downloaded here).
 *
 * protobufjs (well kept, pure JS) encodes the messages from the subset of the official
 * onnx.proto schema below; field numbers are the official ones, so ONNX Runtime reads the
 * result like any exported model.
 */
import protobuf from 'protobufjs';

const ONNX_PROTO_SUBSET = `
syntax = "proto2";
package onnx;
message AttributeProto {
  optional string name = 1;
  optional float f = 2;
  optional int64 i = 3;
  optional bytes s = 4;
  repeated int64 ints = 8;
  optional int32 type = 20;
}
message ValueInfoProto {
  optional string name = 1;
  optional TypeProto type = 2;
}
message NodeProto {
  repeated string input = 1;
  repeated string output = 2;
  optional string name = 3;
  optional string op_type = 4;
  repeated AttributeProto attribute = 5;
  optional string domain = 7;
}
message ModelProto {
  optional int64 ir_version = 1;
  optional string producer_name = 2;
  optional GraphProto graph = 7;
  repeated OperatorSetIdProto opset_import = 8;
}
message GraphProto {
  repeated NodeProto node = 1;
  optional string name = 2;
  repeated TensorProto initializer = 5;
  repeated ValueInfoProto input = 11;
  repeated ValueInfoProto output = 12;
}
message TensorProto {
  repeated int64 dims = 1;
  optional int32 data_type = 2;
  optional string name = 8;
  optional bytes raw_data = 9;
}
message TensorShapeProto {
  message Dimension {
    optional int64 dim_value = 1;
    optional string dim_param = 2;
  }
  repeated Dimension dim = 1;
}
message TypeProto {
  message Tensor {
    optional int32 elem_type = 1;
    optional TensorShapeProto shape = 2;
  }
  optional Tensor tensor_type = 1;
}
message OperatorSetIdProto {
  optional string domain = 1;
  optional int64 version = 2;
}
`;

const root = protobuf.parse(ONNX_PROTO_SUBSET).root;
const ModelProto = root.lookupType('onnx.ModelProto');

/** TensorProto.DataType values. */
export const FLOAT = 1;
export const INT32 = 6;
export const INT64 = 7;
const ATTR_INT = 2;
const ATTR_INTS = 7;

type Dim = number | string;

interface ValueInfo {
  name: string;
  type: { tensorType: { elemType: number; shape: { dim: ({ dimValue: number } | { dimParam: string })[] } } };
}

function valueInfo(name: string, elemType: number, shape: Dim[]): ValueInfo {
  return {
    name,
    type: {
      tensorType: {
        elemType,
        shape: { dim: shape.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

interface Node {
  opType: string;
  input: string[];
  output: string[];
  attribute: { name: string; type: number; i?: number; ints?: number[] }[];
}

/** Builds one graph node by node; names are generated. */
class GraphBuilder {
  readonly nodes: Node[] = [];
  readonly initializers: { name: string; dims: number[]; dataType: number; rawData: Uint8Array }[] = [];
  private counter = 0;

  fresh(prefix: string): string {
    this.counter += 1;
    return `${prefix}_${this.counter}`;
  }

  floats(values: number[], dims: number[]): string {
    const name = this.fresh('c');
    const data = new Float32Array(values);
    this.initializers.push({ name, dims, dataType: FLOAT, rawData: new Uint8Array(data.buffer) });
    return name;
  }

  ints(values: number[], dims: number[] = [values.length]): string {
    const name = this.fresh('i');
    const data = BigInt64Array.from(values.map((v) => BigInt(v)));
    this.initializers.push({ name, dims, dataType: INT64, rawData: new Uint8Array(data.buffer) });
    return name;
  }

  op(opType: string, inputs: string[], attrs: Record<string, number | number[]> = {}, output?: string): string {
    const out = output ?? this.fresh(opType.toLowerCase());
    const attribute = Object.entries(attrs).map(([name, v]) => (Array.isArray(v) ? { name, type: ATTR_INTS, ints: v } : { name, type: ATTR_INT, i: v }));
    this.nodes.push({ opType, input: inputs, output: [out], attribute });
    return out;
  }
}

export type Base = 'nanmean' | 'last' | 'group_nanmean' | 'rms';

/**
 * A graph that follows one export's contract and computes something checkable:
 *
 *   out[b, h, k] = base[b] + meanWeight * mean(context[b]) + stepSlope * (h + 1) + offsets[k]
 *
 * base is the mean of the finite values of the row (`nanmean`), the row's last value
 * (`last`), the mean of `nanmean` over all rows sharing the row's id (`group_nanmean`,
 * needs `idInput`), or the root mean square of the finite values (`rms`: squares in float32, as
 * the exports' scalers compute them). `mean(context)` is a plain mean, so NaN or padding shows in it. With
 * `offsets` null the output is [B, H] (a point forecast).
 */
export interface GraphSpec {
  contextName?: string;
  contextLength: number;
  idInput?: { name: string; elemType?: number };
  outputName?: string;
  horizon: number;
  offsets: number[] | null;
  base: Base;
  stepSlope?: number;
  meanWeight?: number;
  batchDim?: Dim;
}

export function buildGraph(spec: GraphSpec): Uint8Array {
  const g = new GraphBuilder();
  const ctx = spec.contextName ?? 'context';
  const batch = spec.batchDim ?? 'batch';
  const inputs = [valueInfo(ctx, FLOAT, [batch, spec.contextLength])];
  const isNan = g.op('IsNaN', [ctx]);
  const zero = g.floats([0], []);
  const filled = g.op('Where', [isNan, zero, ctx]);
  const observed = g.op('Cast', [g.op('Not', [isNan])], { to: FLOAT });
  const axis1 = g.ints([1]);
  const rowSum = g.op('ReduceSum', [filled, axis1], { keepdims: 1 });
  const rowCount = g.op('ReduceSum', [observed, axis1], { keepdims: 1 });
  const rowNanMean = g.op('Div', [rowSum, rowCount]); // [B, 1]

  let base: string;
  if (spec.base === 'last') {
    base = g.op('Slice', [ctx, g.ints([-1]), g.ints([spec.contextLength]), axis1]);
  } else if (spec.base === 'nanmean') {
    base = rowNanMean;
  } else if (spec.base === 'rms') {
    const sumSq = g.op('ReduceSum', [g.op('Mul', [filled, filled]), axis1], { keepdims: 1 });
    base = g.op('Sqrt', [g.op('Div', [sumSq, rowCount])]);
  } else {
    if (!spec.idInput) throw new Error('group_nanmean needs an id input');
    const ids = spec.idInput.name;
    inputs.push(valueInfo(ids, spec.idInput.elemType ?? INT64, [batch]));
    const col = g.op('Unsqueeze', [ids, g.ints([1])]);
    const row = g.op('Unsqueeze', [ids, g.ints([0])]);
    const same = g.op('Cast', [g.op('Equal', [col, row])], { to: FLOAT }); // [B, B]
    const groupSum = g.op('MatMul', [same, rowNanMean]);
    const groupSize = g.op('ReduceSum', [same, axis1], { keepdims: 1 });
    base = g.op('Div', [groupSum, groupSize]);
  }
  if (spec.idInput && spec.base !== 'group_nanmean') {
    inputs.push(valueInfo(spec.idInput.name, spec.idInput.elemType ?? INT64, [batch]));
  }
  if (spec.meanWeight) {
    const plainSum = g.op('ReduceSum', [ctx, axis1], { keepdims: 1 });
    const scaled = g.op('Mul', [plainSum, g.floats([spec.meanWeight / spec.contextLength], [])]);
    base = g.op('Add', [base, scaled]);
  }
  const slope = spec.stepSlope ?? 0;
  const steps = Array.from({ length: spec.horizon }, (_, h) => slope * (h + 1));
  const outName = spec.outputName ?? (spec.offsets ? 'quantiles' : 'forecast');
  let outShape: Dim[];
  if (spec.offsets) {
    const k = spec.offsets.length;
    const base3 = g.op('Unsqueeze', [base, g.ints([2])]); // [B, 1, 1]
    const withSteps = g.op('Add', [base3, g.floats(steps, [1, spec.horizon, 1])]);
    g.op('Add', [withSteps, g.floats(spec.offsets, [1, 1, k])], {}, outName);
    outShape = [batch, spec.horizon, k];
  } else {
    g.op('Add', [base, g.floats(steps, [1, spec.horizon])], {}, outName);
    outShape = [batch, spec.horizon];
  }
  const model = {
    irVersion: 8,
    producerName: 'tsfm-service tests',
    opsetImport: [{ domain: '', version: 17 }],
    graph: {
      name: 'contract_test_graph',
      node: g.nodes,
      initializer: g.initializers,
      input: inputs,
      output: [valueInfo(outName, FLOAT, outShape)],
    },
  };
  const err = ModelProto.verify(model);
  if (err) throw new Error(`invalid test model: ${err}`);
  return ModelProto.encode(ModelProto.fromObject(model)).finish();
}
