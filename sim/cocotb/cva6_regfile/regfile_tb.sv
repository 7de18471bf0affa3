// The LUTRAM register file as CVA6's issue stage instantiates it (64-bit, 2 read and 2 write ports,
// x0 reads zero), with its packed port arrays as plain ports for the test.
module regfile_tb (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic [4:0]  raddr0, raddr1,
  output logic [63:0] rdata0, rdata1,
  input  logic [4:0]  waddr0, waddr1,
  input  logic [63:0] wdata0, wdata1,
  input  logic        we0, we1
);
  logic [1:0][63:0] rdata;
  ariane_regfile #(.DATA_WIDTH(64), .NR_READ_PORTS(2), .NR_WRITE_PORTS(2), .ZERO_REG_ZERO(1)) dut (
    .clk_i, .rst_ni, .test_en_i(1'b0),
    .raddr_i({raddr1, raddr0}), .rdata_o(rdata),
    .waddr_i({waddr1, waddr0}), .wdata_i({wdata1, wdata0}), .we_i({we1, we0})
  );
  assign rdata0 = rdata[0];
  assign rdata1 = rdata[1];
endmodule
