// Synthesis stand-in for CVA6's tc_sram_wrapper (common/local/util/tc_sram_wrapper.sv). CVA6's own
// wrapper puts its behavioural RAM inside `synthesis translate_off` (CVA6's FPGA flow swaps in a vendor
// RAM), so synthesis tools would silently drop every cache RAM. This one is an inferrable single-port
// RAM with byte enables and one cycle of read latency: block RAM on the 7 series. Same parameters and
// ports; only NumPorts = 1, Latency = 1 (all that CVA6's `sram` uses) are implemented.
// Selected by `nanobpf-rtl-files --synthesis` (make synth-estimate; the board flow). Simulation keeps
// CVA6's behavioural model.
module tc_sram_wrapper #(
  parameter int unsigned NumWords    = 32'd1024,
  parameter int unsigned DataWidth   = 32'd128,
  parameter int unsigned ByteWidth   = 32'd8,
  parameter int unsigned NumPorts    = 32'd2,
  parameter int unsigned Latency     = 32'd1,
  parameter              SimInit     = "none",
  parameter bit          PrintSimCfg = 1'b0,
  parameter int unsigned AddrWidth   = (NumWords > 32'd1) ? $clog2(NumWords) : 32'd1,
  parameter int unsigned BeWidth     = (DataWidth + ByteWidth - 32'd1) / ByteWidth,
  parameter type         addr_t      = logic [AddrWidth-1:0],
  parameter type         data_t      = logic [DataWidth-1:0],
  parameter type         be_t        = logic [BeWidth-1:0]
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,   // unused: RAM contents and read data are not reset
  input  logic  [NumPorts-1:0] req_i,
  input  logic  [NumPorts-1:0] we_i,
  input  addr_t [NumPorts-1:0] addr_i,
  input  data_t [NumPorts-1:0] wdata_i,
  input  be_t   [NumPorts-1:0] be_i,
  output data_t [NumPorts-1:0] rdata_o
);
  if (NumPorts != 1 || Latency != 1) begin : gen_unsupported
    $error("tc_sram_wrapper (synthesis): only NumPorts = 1 and Latency = 1 are implemented");
  end

  data_t mem [NumWords];

  always_ff @(posedge clk_i) begin
    if (req_i[0]) begin
      if (we_i[0]) begin
        for (int unsigned b = 0; b < BeWidth; b++)
          if (be_i[0][b]) mem[addr_i[0]][b*ByteWidth +: ByteWidth] <= wdata_i[0][b*ByteWidth +: ByteWidth];
      end else begin
        rdata_o[0] <= mem[addr_i[0]];
      end
    end
  end
endmodule
