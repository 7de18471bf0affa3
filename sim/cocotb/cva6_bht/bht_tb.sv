// The distributed-RAM branch history table as CVA6's frontend instantiates it, with its packed
// structs as plain ports for the test.
module bht_tb #(parameter int unsigned NR_ENTRIES = 64) (
  input  logic                   clk_i,
  input  logic                   rst_ni,
  input  logic                   flush_i,
  input  logic                   debug_mode_i,
  input  logic [riscv::VLEN-1:0] vpc_i,
  input  logic                   upd_valid,
  input  logic [riscv::VLEN-1:0] upd_pc,
  input  logic                   upd_taken,
  output logic [1:0]             pred_valid,
  output logic [1:0]             pred_taken
);
  ariane_pkg::bht_update_t upd;
  ariane_pkg::bht_prediction_t [ariane_pkg::INSTR_PER_FETCH-1:0] pred;
  always_comb begin
    upd = '0;
    upd.valid = upd_valid;
    upd.pc = upd_pc;
    upd.taken = upd_taken;
  end
  bht #(.NR_ENTRIES(NR_ENTRIES)) dut (.clk_i, .rst_ni, .flush_i, .debug_mode_i, .vpc_i, .bht_update_i(upd),
                                      .bht_prediction_o(pred));
  for (genvar i = 0; i < ariane_pkg::INSTR_PER_FETCH; i++) begin : gen_out
    assign pred_valid[i] = pred[i].valid;
    assign pred_taken[i] = pred[i].taken;
  end
endmodule
