// CVA6's integer register file for FPGAs: the same module and ports as CVA6 4.2's ariane_regfile_ff.sv,
// which nanobpf-rtl-files replaces with this file when hw/defs/soc.toml [cva6] lutram_regfile is true.
//
// Why: the flip-flop version is 31 x 64 flops with a write decoder per word and a 32:1 multiplexer per
// read port bit, about 3.5K LUT and 2K FF per core in yosys. Here each write port has its own bank of
// distributed RAM (one write, NR_READ_PORTS asynchronous reads: RAM32M on a 7-series part), and a live
// value table (LVT: 32 flops of port number) says which bank holds each register's latest value. Reads
// stay combinational, as CVA6's issue stage expects.
//
// Same behaviour as the flip-flop version: when two ports write one register in a cycle the higher port
// wins; register 0 reads 0 with ZERO_REG_ZERO. Difference: reset clears the LVT, not the banks; a
// register read before the program writes it holds whatever was there (0 after FPGA configuration and
// in the simulator), as in a real core's register file; no code may rely on registers being zero.
module ariane_regfile #(
  parameter int unsigned DATA_WIDTH     = 32,
  parameter int unsigned NR_READ_PORTS  = 2,
  parameter int unsigned NR_WRITE_PORTS = 2,
  parameter bit          ZERO_REG_ZERO  = 0
)(
  input  logic                                      clk_i,
  input  logic                                      rst_ni,
  input  logic                                      test_en_i,  // unused (no clock gates here)
  input  logic [NR_READ_PORTS-1:0][4:0]             raddr_i,
  output logic [NR_READ_PORTS-1:0][DATA_WIDTH-1:0]  rdata_o,
  input  logic [NR_WRITE_PORTS-1:0][4:0]            waddr_i,
  input  logic [NR_WRITE_PORTS-1:0][DATA_WIDTH-1:0] wdata_i,
  input  logic [NR_WRITE_PORTS-1:0]                 we_i
);
  localparam int unsigned NUM_WORDS = 32;
  localparam int unsigned LVT_WIDTH = NR_WRITE_PORTS > 1 ? $clog2(NR_WRITE_PORTS) : 1;

  logic [LVT_WIDTH-1:0] lvt_q [NUM_WORDS];
  logic [NR_WRITE_PORTS-1:0][NR_READ_PORTS-1:0][DATA_WIDTH-1:0] bank_rdata;

  for (genvar w = 0; w < NR_WRITE_PORTS; w++) begin : gen_bank
    logic [DATA_WIDTH-1:0] mem [NUM_WORDS];
    always_ff @(posedge clk_i) begin
      if (we_i[w]) mem[waddr_i[w]] <= wdata_i[w];
    end
    for (genvar r = 0; r < NR_READ_PORTS; r++) begin : gen_read
      assign bank_rdata[w][r] = mem[raddr_i[r]];
    end
  end

  // later ports override earlier ones, as in the flip-flop file's write loop
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (int unsigned i = 0; i < NUM_WORDS; i++) lvt_q[i] <= '0;
    end else begin
      for (int unsigned w = 0; w < NR_WRITE_PORTS; w++) begin
        if (we_i[w]) lvt_q[waddr_i[w]] <= LVT_WIDTH'(w);
      end
    end
  end

  for (genvar r = 0; r < NR_READ_PORTS; r++) begin : gen_rdata
    assign rdata_o[r] = (ZERO_REG_ZERO && raddr_i[r] == 5'd0) ? '0 : bank_rdata[lvt_q[raddr_i[r]]][r];
  end
endmodule
