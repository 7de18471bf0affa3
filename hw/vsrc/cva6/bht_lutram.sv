// CVA6's branch history table for FPGAs: the same module and ports as CVA6 4.2's core/frontend/bht.sv,
// which nanobpf-rtl-files replaces with this file when hw/defs/soc.toml [cva6] lutram_bht is true.
//
// Why: CVA6's table is flip-flops (3 per entry) with a full copy of itself as next state, so its area
// grows with every entry (128 entries: about 1.0K LUT and 384 FF per core in yosys). The packet path
// has more branches than 128 entries hold apart: at 1,024 entries the 1-core DPU seals a 1200-byte
// QUIC packet in about 220 fewer cycles (docs/dataplane.md). Here each prediction column is a
// distributed RAM (one write, two asynchronous reads: the fetch's prediction and the update's current
// counter), a few LUTs per 64 entries.
//
// Same behaviour as CVA6's table: one 2-bit saturating counter and a valid bit per instruction slot of
// a fetch block, indexed by the fetch address; an update moves the counter towards the outcome and sets
// valid; an update in debug mode is ignored; a read in the cycle of an update sees the old entry.
// Differences: reset and flush_i (CVA6 raises it on exceptions, returns from them and debug entry) do
// not clear the table, which distributed RAM cannot do in a cycle: every entry is 0 (not valid) from
// configuration (its initial value), and entries outlive an exception. The table only predicts
// a branch's direction - the target comes from the instruction - so a stale entry costs at most a
// misprediction, never a wrong result.
module bht #(
    parameter int unsigned NR_ENTRIES = 1024
)(
    input  logic                        clk_i,
    input  logic                        rst_ni,
    input  logic                        flush_i,
    input  logic                        debug_mode_i,
    input  logic [riscv::VLEN-1:0]      vpc_i,
    input  ariane_pkg::bht_update_t     bht_update_i,
    output ariane_pkg::bht_prediction_t [ariane_pkg::INSTR_PER_FETCH-1:0] bht_prediction_o
);
    // the index arithmetic of CVA6's bht.sv
    localparam OFFSET = ariane_pkg::RVC == 1'b1 ? 1 : 2;
    localparam NR_ROWS = NR_ENTRIES / ariane_pkg::INSTR_PER_FETCH;
    localparam ROW_ADDR_BITS = $clog2(ariane_pkg::INSTR_PER_FETCH);
    localparam ROW_INDEX_BITS = ariane_pkg::RVC == 1'b1 ? $clog2(ariane_pkg::INSTR_PER_FETCH) : 1;
    localparam PREDICTION_BITS = $clog2(NR_ROWS) + OFFSET + ROW_ADDR_BITS;
    unread i_unread (.d_i(|vpc_i ^ rst_ni ^ flush_i));

    logic [$clog2(NR_ROWS)-1:0] index, update_pc;
    logic [ROW_INDEX_BITS-1:0]  update_row_index;

    assign index     = vpc_i[PREDICTION_BITS - 1:ROW_ADDR_BITS + OFFSET];
    assign update_pc = bht_update_i.pc[PREDICTION_BITS - 1:ROW_ADDR_BITS + OFFSET];
    if (ariane_pkg::RVC) begin : gen_update_row_index
        assign update_row_index = bht_update_i.pc[ROW_ADDR_BITS + OFFSET - 1:OFFSET];
    end else begin : gen_update_row_index_zero
        assign update_row_index = '0;
    end

    for (genvar i = 0; i < ariane_pkg::INSTR_PER_FETCH; i++) begin : gen_column
        // {valid, saturation counter}
        logic [2:0] mem [NR_ROWS];
        // every entry not valid at configuration (distributed RAM's INIT), as CVA6's reset leaves them;
        // without it synthesis may take the never-cleared valid bit for a constant 1
        initial for (int unsigned r = 0; r < NR_ROWS; r++) mem[r] = '0;
        logic [2:0] cur, next;
        logic [1:0] cnt;
        assign cur = mem[update_pc];
        assign cnt = cur[1:0];
        always_comb begin
            next = {1'b1, cnt};
            if (bht_update_i.taken && cnt != 2'b11) next[1:0] = cnt + 2'd1;
            if (!bht_update_i.taken && cnt != 2'b00) next[1:0] = cnt - 2'd1;
        end
        always_ff @(posedge clk_i) begin
            if (bht_update_i.valid && !debug_mode_i && update_row_index == ROW_INDEX_BITS'(i))
                mem[update_pc] <= next;
        end
        assign bht_prediction_o[i].valid = mem[index][2];
        assign bht_prediction_o[i].taken = mem[index][1];
    end
endmodule
