// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "../tokens/ERC20.sol";
import {IERC20} from "../tokens/IERC20.sol";
import {ReentrancyGuard} from "../common/ReentrancyGuard.sol";
import {SafeTransfer} from "../common/SafeTransfer.sol";

/// @title DexPair
/// @notice Constant-product (x*y=k) pool with a 0.3% swap fee and the V2-style events (`Swap`, `Sync`, `Mint`,
///         `Burn`) the token indexer reads to price tokens. The pair is itself the ERC-20 of its LP shares.
/// @dev Devnet simplifications, deliberate: no price accumulators (no TWAP), no protocol fee, no flash swaps
///      (`swap`'s data is ignored), no locked minimum liquidity (first deposit mints sqrt(amount0*amount1)).
///      Like V2, callers transfer tokens in first and then call mint/swap; the router does both.
contract DexPair is ERC20, ReentrancyGuard {
    using SafeTransfer for address;

    address public immutable factory;
    address public immutable token0;
    address public immutable token1;

    uint112 private _reserve0;
    uint112 private _reserve1;
    uint32 private _blockTimestampLast;

    event Mint(address indexed sender, uint256 amount0, uint256 amount1);
    event Burn(address indexed sender, uint256 amount0, uint256 amount1, address indexed to);
    event Swap(
        address indexed sender,
        uint256 amount0In,
        uint256 amount1In,
        uint256 amount0Out,
        uint256 amount1Out,
        address indexed to
    );
    event Sync(uint112 reserve0, uint112 reserve1);

    error InsufficientLiquidityMinted();
    error InsufficientLiquidityBurned();
    error InsufficientOutputAmount();
    error InsufficientInputAmount();
    error InsufficientLiquidity();
    error InvalidSwapRecipient(address to);
    error ConstantProductViolated();
    error ReserveOverflow();

    /// @dev Deployed by DexFactory with the tokens already sorted (token0 < token1).
    constructor(address _token0, address _token1) ERC20("Dex V2 LP", "DEX-V2-LP", 18) {
        factory = msg.sender;
        token0 = _token0;
        token1 = _token1;
    }

    function getReserves() public view returns (uint112 reserve0, uint112 reserve1, uint32 blockTimestampLast) {
        return (_reserve0, _reserve1, _blockTimestampLast);
    }

    /// @notice Mints LP shares to `to` for the tokens transferred in since the last update.
    function mint(address to) external nonReentrant returns (uint256 liquidity) {
        (uint112 reserve0, uint112 reserve1,) = getReserves();
        uint256 balance0 = IERC20(token0).balanceOf(address(this));
        uint256 balance1 = IERC20(token1).balanceOf(address(this));
        uint256 amount0 = balance0 - reserve0;
        uint256 amount1 = balance1 - reserve1;

        uint256 supply = totalSupply();
        if (supply == 0) {
            liquidity = _sqrt(amount0 * amount1);
        } else {
            liquidity = _min((amount0 * supply) / reserve0, (amount1 * supply) / reserve1);
        }
        if (liquidity == 0) revert InsufficientLiquidityMinted();
        _mint(to, liquidity);

        _update(balance0, balance1);
        emit Mint(msg.sender, amount0, amount1);
    }

    /// @notice Burns the LP shares transferred to the pair and sends the matching tokens to `to`.
    function burn(address to) external nonReentrant returns (uint256 amount0, uint256 amount1) {
        uint256 balance0 = IERC20(token0).balanceOf(address(this));
        uint256 balance1 = IERC20(token1).balanceOf(address(this));
        uint256 liquidity = balanceOf(address(this));
        uint256 supply = totalSupply();

        amount0 = (liquidity * balance0) / supply;
        amount1 = (liquidity * balance1) / supply;
        if (amount0 == 0 || amount1 == 0) revert InsufficientLiquidityBurned();
        _burn(address(this), liquidity);
        token0.safeTransfer(to, amount0);
        token1.safeTransfer(to, amount1);

        _update(IERC20(token0).balanceOf(address(this)), IERC20(token1).balanceOf(address(this)));
        emit Burn(msg.sender, amount0, amount1, to);
    }

    /// @notice Sends the requested outputs to `to`, then checks that the tokens transferred in, less the 0.3%
    ///         fee, keep reserve0 * reserve1 from decreasing.
    /// @param data ignored (kept for V2 ABI compatibility; no flash-swap callback)
    function swap(uint256 amount0Out, uint256 amount1Out, address to, bytes calldata data) external nonReentrant {
        data; // unused on purpose
        if (amount0Out == 0 && amount1Out == 0) revert InsufficientOutputAmount();
        if (to == token0 || to == token1) revert InvalidSwapRecipient(to);

        uint256 balance0;
        uint256 balance1;
        uint256 amount0In;
        uint256 amount1In;
        {
            // Scoped so the reserves leave the stack before the event (avoids "stack too deep").
            (uint112 reserve0, uint112 reserve1,) = getReserves();
            if (amount0Out >= reserve0 || amount1Out >= reserve1) revert InsufficientLiquidity();

            if (amount0Out > 0) token0.safeTransfer(to, amount0Out);
            if (amount1Out > 0) token1.safeTransfer(to, amount1Out);
            balance0 = IERC20(token0).balanceOf(address(this));
            balance1 = IERC20(token1).balanceOf(address(this));

            amount0In = balance0 > reserve0 - amount0Out ? balance0 - (reserve0 - amount0Out) : 0;
            amount1In = balance1 > reserve1 - amount1Out ? balance1 - (reserve1 - amount1Out) : 0;
            if (amount0In == 0 && amount1In == 0) revert InsufficientInputAmount();
            _checkConstantProduct(balance0, balance1, amount0In, amount1In, reserve0, reserve1);
        }

        _update(balance0, balance1);
        emit Swap(msg.sender, amount0In, amount1In, amount0Out, amount1Out, to);
    }

    /// @dev Fee-adjusted balances, scaled by 1000: 0.3% of the input stays in the pool as LP revenue, and the
    ///      product of the adjusted balances must not fall below the product of the reserves.
    function _checkConstantProduct(
        uint256 balance0,
        uint256 balance1,
        uint256 amount0In,
        uint256 amount1In,
        uint112 reserve0,
        uint112 reserve1
    ) private pure {
        uint256 balance0Adjusted = balance0 * 1000 - amount0In * 3;
        uint256 balance1Adjusted = balance1 * 1000 - amount1In * 3;
        if (balance0Adjusted * balance1Adjusted < uint256(reserve0) * reserve1 * 1_000_000) {
            revert ConstantProductViolated();
        }
    }

    /// @notice Sets the reserves to the current balances (recovers from tokens sent without mint/swap).
    function sync() external nonReentrant {
        _update(IERC20(token0).balanceOf(address(this)), IERC20(token1).balanceOf(address(this)));
    }

    function _update(uint256 balance0, uint256 balance1) private {
        if (balance0 > type(uint112).max || balance1 > type(uint112).max) revert ReserveOverflow();
        _reserve0 = uint112(balance0);
        _reserve1 = uint112(balance1);
        _blockTimestampLast = uint32(block.timestamp);
        emit Sync(_reserve0, _reserve1);
    }

    function _min(uint256 a, uint256 b) private pure returns (uint256) {
        return a < b ? a : b;
    }

    /// @dev Babylonian method; floor(sqrt(y)).
    function _sqrt(uint256 y) private pure returns (uint256 z) {
        if (y > 3) {
            z = y;
            uint256 x = y / 2 + 1;
            while (x < z) {
                z = x;
                x = (y / x + x) / 2;
            }
        } else if (y != 0) {
            z = 1;
        }
    }
}
